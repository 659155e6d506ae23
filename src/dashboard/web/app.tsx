/**
 * The live dashboard page (Preact, bundled by esbuild into dist/dashboard/app.js). It renders each
 * Snapshot the server pushes on /dashboard/events: brokers up or down and the controller, the
 * under-replicated and offline counts, every partition with its leader, replicas and ISR and the
 * leader's view of each replica's lag, replication bytes/s per broker against the throttle, and the
 * ISR change timeline. No reload: the EventSource reconnects by itself.
 */
import { render } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import type {
  BrokerView,
  EventView,
  IsrChangeView,
  PartitionView,
  ReplicaLag,
  Snapshot,
} from '../snapshot.js';

/** Seconds of replication rate kept on the chart. */
const CHART_SECONDS = 120;

function human(bytes: number): string {
  if (bytes < 0) return '?';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let x = bytes;
  let i = 0;
  while (x >= 1024 && i < units.length - 1) {
    x /= 1024;
    i++;
  }
  return i === 0 ? `${x} B` : `${x.toFixed(1)} ${units[i]}`;
}

const clock = (ms: number): string => new Date(ms).toLocaleTimeString(undefined, { hour12: false });

function Brokers({ brokers, controllerId }: { brokers: readonly BrokerView[]; controllerId: number }) {
  return (
    <section class="brokers">
      {brokers.map((b) => (
        <div
          class={`broker ${b.up ? 'up' : 'down'}`}
          data-testid={`broker-${b.id}`}
          data-state={b.up ? 'up' : 'down'}
        >
          <div class="broker-id">
            broker {b.id}
            {b.id === controllerId ? (
              <span class="controller" title="the active controller">
                {' '}
                ★ controller
              </span>
            ) : null}
          </div>
          <div class="broker-state">{b.up ? 'up' : `down (${b.state})`}</div>
          <div class="broker-port">127.0.0.1:{b.port}</div>
          <div class="broker-rates">
            out {human(b.leaderBytesPerSec)}/s · in {human(b.followerBytesPerSec)}/s
          </div>
        </div>
      ))}
    </section>
  );
}

function Counts({ s, connected }: { s: Snapshot; connected: boolean }) {
  return (
    <section class="counts">
      <span class={`count ${s.underReplicated > 0 ? 'bad' : ''}`}>
        under-replicated <b data-testid="under-replicated">{s.underReplicated}</b>
      </span>
      <span class={`count ${s.offline > 0 ? 'bad' : ''}`}>
        offline <b data-testid="offline">{s.offline}</b>
      </span>
      <span class="count">
        partitions <b>{s.partitions.length}</b>
      </span>
      <span class={`live ${connected ? 'on' : 'off'}`}>
        {connected ? 'live' : 'reconnecting'} · {clock(s.timeMs)}
      </span>
    </section>
  );
}

function LagBar({ r, max }: { r: ReplicaLag; max: number }) {
  const width = max <= 0 || r.lagBytes <= 0 ? 0 : Math.max(2, Math.round((100 * r.lagBytes) / max));
  return (
    <div class={`lag ${r.inIsr ? 'in-isr' : 'out-of-isr'}`} data-testid={`lag-${r.broker}`}>
      <span class="lag-broker">{r.broker}</span>
      <span class="lag-track">
        <span class="lag-fill" style={{ width: `${width}%` }} />
      </span>
      <span class="lag-text">
        {r.lagOffsets < 0 ? 'lag unknown' : `${r.lagOffsets} offsets, ${human(r.lagBytes)}`}
        {r.inIsr ? '' : ' · out of ISR'}
      </span>
    </div>
  );
}

function Partitions({ partitions }: { partitions: readonly PartitionView[] }) {
  const max = Math.max(0, ...partitions.flatMap((p) => p.lag.map((r) => r.lagBytes)));
  if (partitions.length === 0) return <p class="empty">No topics yet.</p>;
  return (
    <table class="partitions">
      <thead>
        <tr>
          <th>topic</th>
          <th>partition</th>
          <th>leader</th>
          <th>replicas</th>
          <th>ISR</th>
          <th>HW / LEO</th>
          <th>size</th>
          <th>lag behind the leader's LEO</th>
        </tr>
      </thead>
      <tbody>
        {partitions.map((p) => {
          const state =
            p.leader < 0 ? 'offline' : p.isr.length < p.replicas.length ? 'under-replicated' : 'ok';
          return (
            <tr class={state} data-testid={`partition-${p.topic}-${p.partition}`} data-state={state}>
              <td>{p.topic}</td>
              <td>{p.partition}</td>
              <td>{p.leader < 0 ? 'none' : p.leader}</td>
              <td>{p.replicas.join(',')}</td>
              <td data-testid="isr">{p.isr.join(',')}</td>
              <td>
                {p.highWatermark < 0 ? '?' : p.highWatermark} / {p.logEndOffset < 0 ? '?' : p.logEndOffset}
              </td>
              <td>{human(p.sizeBytes)}</td>
              <td>
                {p.lag
                  .filter((r) => r.broker !== p.leader)
                  .map((r) => (
                    <LagBar r={r} max={max} />
                  ))}
              </td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

function Timeline({ changes }: { changes: readonly IsrChangeView[] }) {
  if (changes.length === 0) return <p class="empty">No ISR changes seen yet.</p>;
  return (
    <ol class="timeline" data-testid="timeline">
      {[...changes].reverse().map((c) => (
        <li class={`change ${c.kind}`} data-testid="isr-change" data-kind={c.kind}>
          <span class="when">{clock(c.timeMs)}</span>
          <span class="what">
            {c.topic}-{c.partition}
          </span>
          <span class="kind">{c.kind}</span>
          <span class="isr">
            [{c.oldIsr.join(',')}] → [{c.newIsr.join(',')}]
          </span>
          <span class="epoch">
            leader {c.leader}, epoch {c.leaderEpoch}
          </span>
          <span class="reason">{c.reason}</span>
        </li>
      ))}
    </ol>
  );
}

function Events({ events }: { events: readonly EventView[] }) {
  if (events.length === 0) return <p class="empty">No recoveries, truncations, rebuilds or deletions yet.</p>;
  return (
    <ol class="timeline events" data-testid="events">
      {[...events].reverse().map((e) => (
        <li
          class={`event ${e.event} ${e.level === 'WARN' ? 'warn' : ''}`}
          data-testid="event"
          data-event={e.event}
        >
          <span class="when">{clock(e.timeMs)}</span>
          <span class="what">broker {e.broker}</span>
          <span class="kind">{e.event}</span>
          <span class="where">{e.partition ?? ''}</span>
          <span class="bytes">{e.bytesDiscarded > 0 ? `${human(e.bytesDiscarded)} discarded` : ''}</span>
          <span class="reason">{e.message}</span>
        </li>
      ))}
    </ol>
  );
}

/** Per-broker replication bytes/s (in, as follower) with the follower throttle drawn as a line. */
function RateChart({ history }: { history: readonly Snapshot[] }) {
  const box = useRef<HTMLDivElement>(null);
  const chart = useRef<uPlot | null>(null);
  const ids = history.at(-1)?.brokers.map((b) => b.id) ?? [];
  const key = ids.join(',');
  useEffect(() => {
    if (box.current === null) return;
    const series: uPlot.Series[] = [
      {},
      ...ids.map((id, i) => ({ label: `broker ${id} in`, stroke: PALETTE[i % PALETTE.length]!, width: 2 })),
      { label: 'throttle', stroke: '#d33', dash: [6, 4], width: 1 },
    ];
    chart.current = new uPlot(
      {
        width: Math.min(box.current.clientWidth || 900, 1100),
        height: 220,
        series,
        axes: [{}, { values: (_u, vals) => vals.map((v) => `${human(v)}/s`), size: 80 }],
        scales: { x: { time: true } },
      },
      [[], ...ids.map(() => []), []],
      box.current,
    );
    return () => {
      chart.current?.destroy();
      chart.current = null;
    };
  }, [key]);
  useEffect(() => {
    const u = chart.current;
    if (u === null) return;
    const xs = history.map((s) => s.timeMs / 1000);
    const perBroker = ids.map((id) =>
      history.map((s) => {
        const b = s.brokers.find((x) => x.id === id);
        return b === undefined || b.followerBytesPerSec < 0 ? null : b.followerBytesPerSec;
      }),
    );
    const throttle = history.map((s) => {
      const rates = s.brokers.map((b) => b.followerThrottleRate).filter((r) => r > 0);
      return rates.length === 0 ? null : Math.max(...rates);
    });
    u.setData([xs, ...perBroker, throttle] as uPlot.AlignedData);
  });
  return <div class="chart" ref={box} data-testid="rate-chart" />;
}

const PALETTE = ['#2a7ae2', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#17becf', '#e377c2', '#7f7f7f'];

function App() {
  const [history, setHistory] = useState<Snapshot[]>([]);
  const [connected, setConnected] = useState(false);
  useEffect(() => {
    // Opened as http://127.0.0.1:H/?token=T when skiff up asks for one (--http-token).
    const token = new URLSearchParams(location.search).get('token');
    const events = new EventSource(
      `/dashboard/events${token === null ? '' : `?token=${encodeURIComponent(token)}`}`,
    );
    events.onopen = () => setConnected(true);
    events.onerror = () => setConnected(false);
    events.onmessage = (m: MessageEvent<string>) => {
      const s = JSON.parse(m.data) as Snapshot;
      setConnected(true);
      setHistory((h) => [...h.filter((x) => x.timeMs > s.timeMs - CHART_SECONDS * 1000), s]);
    };
    return () => events.close();
  }, []);
  const s = history.at(-1);
  if (s === undefined) return <p class="empty">Waiting for the cluster…</p>;
  return (
    <main>
      <header>
        <h1>Skiff</h1>
        <span class="cluster">cluster {s.clusterId}</span>
      </header>
      <Counts s={s} connected={connected} />
      <Brokers brokers={s.brokers} controllerId={s.controllerId} />
      {s.problems.length > 0 ? (
        <ul class="problems">
          {s.problems.map((p) => (
            <li>{p}</li>
          ))}
        </ul>
      ) : null}
      <h2>Replication bytes/s</h2>
      <RateChart history={history} />
      <h2>Partitions</h2>
      <Partitions partitions={s.partitions} />
      <h2>ISR changes</h2>
      <Timeline changes={s.isrChanges} />
      <h2>Recoveries, truncations, rebuilds and deletions</h2>
      <Events events={s.events} />
    </main>
  );
}

// The server's placeholder text goes; the app is the page's one child.
const root = document.getElementById('app')!;
root.textContent = '';
render(<App />, root);
