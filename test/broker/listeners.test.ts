import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { listenersFromProperties } from '../../src/broker/listeners.js';
import { ImageBuilder } from '../../src/metadata/image-builder.js';
import { MetadataKeys } from '../../src/metadata/keys.js';
import { ClientConnection } from '../../src/network/client-connection.js';
import type { DescribeClusterResponse } from '../../src/protocol/generated/DescribeClusterResponse.js';
import { ErrorCode } from '../../src/protocol/generated/errors.js';
import type { FindCoordinatorResponse } from '../../src/protocol/generated/FindCoordinatorResponse.js';
import type { MetadataResponse } from '../../src/protocol/generated/MetadataResponse.js';
import { ZERO_UUID } from '../../src/protocol/uuid.js';
import { createTopic, startBroker, type TestBroker } from './helpers.js';

const props = (entries: Record<string, string>) => new Map(Object.entries(entries));

describe('listeners from server.properties', () => {
  it('reads several listeners, the protocol map, advertised listeners and the inter-broker listener', () => {
    const c = listenersFromProperties(
      props({
        listeners: 'PLAINTEXT://:9092,SSL://:9093,INTERNAL://127.0.0.1:9094',
        'listener.security.protocol.map': 'PLAINTEXT:PLAINTEXT,SSL:SSL,INTERNAL:SSL',
        'advertised.listeners': 'PLAINTEXT://kafka.example:9092,INTERNAL://10.0.0.1:9094',
        'inter.broker.listener.name': 'internal',
      }),
    );
    assert.deepEqual(
      c.listeners.map((l) => [l.listenerName, l.securityProtocol, l.host, l.port]),
      [
        ['PLAINTEXT', 'PLAINTEXT', '', 9092],
        ['SSL', 'SSL', '', 9093],
        ['INTERNAL', 'SSL', '127.0.0.1', 9094],
      ],
    );
    assert.deepEqual(
      c.advertised.map((l) => `${l.listenerName}://${l.host}:${l.port}`),
      ['PLAINTEXT://kafka.example:9092', 'INTERNAL://10.0.0.1:9094'],
    );
    assert.equal(c.interBrokerListenerName, 'INTERNAL');
    // Without advertised.listeners, a wildcard host is advertised as the loopback address.
    const d = listenersFromProperties(props({ listeners: 'PLAINTEXT://0.0.0.0:9092,SSL://:9093' }));
    assert.deepEqual(
      d.advertised.map((l) => l.host),
      ['127.0.0.1', '127.0.0.1'],
    );
    assert.equal(d.interBrokerListenerName, 'PLAINTEXT');
    const e = listenersFromProperties(
      props({ listeners: 'PLAINTEXT://:9092,SSL://:9093', 'security.inter.broker.protocol': 'SSL' }),
    );
    assert.equal(e.interBrokerListenerName, 'SSL');
    // IPv4 and IPv6 listeners may share a port.
    listenersFromProperties(
      props({
        listeners: 'PLAINTEXT://127.0.0.1:9092,SSL://[::1]:9092',
      }),
    );
  });

  it("refuses bad listener settings with Kafka's messages", () => {
    const refuses = (entries: Record<string, string>, message: RegExp) =>
      assert.throws(() => listenersFromProperties(props(entries)), message);
    refuses(
      { listeners: 'PLAINTEXT://:9092,FOO://:9093' },
      /^Error: Error creating broker listeners from 'PLAINTEXT:\/\/:9092,FOO:\/\/:9093': No security protocol defined for listener FOO$/,
    );
    refuses({ listeners: 'PLAINTEXT:9092' }, /Unable to parse PLAINTEXT:9092 to a broker endpoint/);
    refuses(
      { listeners: 'PLAINTEXT://:9092,PLAINTEXT://:9093' },
      /Each listener must have a different name, listeners: PLAINTEXT:\/\/:9092,PLAINTEXT:\/\/:9093/,
    );
    refuses({ listeners: 'PLAINTEXT://:9092,SSL://:9092' }, /Each listener must have a different port/);
    refuses(
      { listeners: 'PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.2:9092' },
      /one needs to be IPv4 and the other IPv6/,
    );
    refuses(
      { listeners: 'PLAINTEXT://:9092', 'listener.security.protocol.map': 'PLAINTEXT:TLS' },
      /Invalid security protocol `TLS` defined in listener.security.protocol.map/,
    );
    refuses(
      {
        listeners: 'PLAINTEXT://:9092,SSL://:9093',
        'inter.broker.listener.name': 'SSL',
        'security.inter.broker.protocol': 'SSL',
      },
      /Only one of inter.broker.listener.name and security.inter.broker.protocol should be set./,
    );
    refuses(
      { listeners: 'PLAINTEXT://:9092', 'inter.broker.listener.name': 'REPLICATION' },
      /Listener with name REPLICATION defined in inter.broker.listener.name not found in listener.security.protocol.map./,
    );
    refuses(
      { listeners: 'PLAINTEXT://:9092', 'security.inter.broker.protocol': 'SSL' },
      /inter.broker.listener.name must be a listener name defined in advertised.listeners. The valid options based on currently configured listeners are PLAINTEXT/,
    );
    refuses(
      { listeners: 'PLAINTEXT://:9092', 'advertised.listeners': 'PLAINTEXT://:9092,SSL://h:9093' },
      /advertised.listeners listener names must be equal to or a subset of the ones defined in listeners/,
    );
    refuses(
      { listeners: 'PLAINTEXT://:9092', 'advertised.listeners': 'PLAINTEXT://0.0.0.0:9092' },
      /advertised.listeners cannot use the nonroutable meta-address 0.0.0.0/,
    );
  });

  it('reads broker registrations written before listeners (one PLAINTEXT endpoint) and with endpoints', () => {
    const keys = new MetadataKeys('c1');
    const b = new ImageBuilder(keys);
    b.load(
      [
        {
          key: keys.broker(1),
          value: JSON.stringify({ host: 'h1', port: 1, rack: null, incarnation: 'a' }),
          modRevision: 5n,
          createRevision: 5n,
          version: 1n,
          lease: 0n,
        },
        {
          key: keys.broker(2),
          value: JSON.stringify({
            host: 'h2',
            port: 2,
            rack: null,
            incarnation: 'b',
            endpoints: [
              { listenerName: 'PLAINTEXT', host: 'h2', port: 2, securityProtocol: 'PLAINTEXT' },
              { listenerName: 'SSL', host: 'h2', port: 3, securityProtocol: 'SSL' },
            ],
          }),
          modRevision: 6n,
          createRevision: 6n,
          version: 1n,
          lease: 0n,
        },
      ],
      6n,
    );
    const image = b.image();
    assert.deepEqual(image.brokers.get(1)!.endpoints, [
      { listenerName: 'PLAINTEXT', host: 'h1', port: 1, securityProtocol: 'PLAINTEXT' },
    ]);
    assert.deepEqual(
      image.brokers.get(2)!.endpoints.map((e) => `${e.listenerName}:${e.port}`),
      ['PLAINTEXT:2', 'SSL:3'],
    );
  });
});

describe('a broker with several listeners', () => {
  let b: TestBroker;
  const conns: ClientConnection[] = [];
  let ports: Map<string, number>;
  const connect = async (listener: string): Promise<ClientConnection> => {
    const c = await ClientConnection.connect('127.0.0.1', ports.get(listener)!, {
      clientId: 'listeners-test',
    });
    conns.push(c);
    return c;
  };

  before(async () => {
    b = await startBroker({
      listeners: 'PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:0,HIDDEN://127.0.0.1:0',
      'listener.security.protocol.map': 'PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT,HIDDEN:PLAINTEXT',
      // HIDDEN listens but is not advertised: a client on it finds no broker it could reach.
      'advertised.listeners': 'PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:0',
      'inter.broker.listener.name': 'INTERNAL',
      'offsets.topic.replication.factor': '1',
      'offsets.topic.num.partitions': '1',
    });
    ports = new Map([...b.broker.addresses].map(([name, a]) => [name, a.port]));
    await createTopic(b, await connect('PLAINTEXT'), 't', 1);
  });
  after(async () => {
    for (const c of conns) c.close();
    await b.stop();
  });

  it('listens on each listener and registers each advertised one', () => {
    assert.deepEqual([...ports.keys()], ['PLAINTEXT', 'INTERNAL', 'HIDDEN']);
    assert.equal(new Set(ports.values()).size, 3);
    const registered = b.metadata.image().brokers.get(1)!.endpoints;
    assert.deepEqual(
      registered.map((e) => [e.listenerName, e.port, e.securityProtocol]),
      [
        ['PLAINTEXT', ports.get('PLAINTEXT'), 'PLAINTEXT'],
        ['INTERNAL', ports.get('INTERNAL'), 'PLAINTEXT'],
      ],
    );
  });

  it("answers Metadata and DescribeCluster with the endpoints of the request's listener", async () => {
    for (const listener of ['PLAINTEXT', 'INTERNAL']) {
      const conn = await connect(listener);
      const m = await b.call<MetadataResponse>(conn, 3, 12, {
        topics: [{ topicId: ZERO_UUID, name: 't' }],
        allowAutoTopicCreation: false,
        includeClusterAuthorizedOperations: false,
        includeTopicAuthorizedOperations: false,
      });
      assert.deepEqual(
        m.brokers.map((x) => [x.nodeId, x.port]),
        [[1, ports.get(listener)]],
      );
      assert.equal(m.topics[0]!.partitions[0]!.errorCode, 0);
      assert.equal(m.topics[0]!.partitions[0]!.leaderId, 1);
      const d = await b.call<DescribeClusterResponse>(conn, 60, 1, {
        includeClusterAuthorizedOperations: false,
        endpointType: 1,
      });
      assert.deepEqual(
        d.brokers.map((x) => [x.brokerId, x.port]),
        [[1, ports.get(listener)]],
      );
    }
  });

  it('leaves out a broker without the listener, and its partitions have no reachable leader', async () => {
    const conn = await connect('HIDDEN');
    const ask = (version: number) =>
      b.call<MetadataResponse>(conn, 3, version, {
        topics: [{ topicId: ZERO_UUID, name: 't' }],
        allowAutoTopicCreation: false,
        includeClusterAuthorizedOperations: false,
        includeTopicAuthorizedOperations: false,
      });
    const v12 = await ask(12);
    assert.deepEqual(v12.brokers, []);
    assert.equal(v12.topics[0]!.partitions[0]!.errorCode, ErrorCode.LISTENER_NOT_FOUND);
    assert.equal(v12.topics[0]!.partitions[0]!.leaderId, -1);
    const v5 = await ask(5);
    assert.equal(v5.topics[0]!.partitions[0]!.errorCode, ErrorCode.LEADER_NOT_AVAILABLE);
  });

  it("answers FindCoordinator with the coordinator's endpoint on the request's listener", async () => {
    const find = async (listener: string): Promise<FindCoordinatorResponse> => {
      const conn = await connect(listener);
      // The first asks create __consumer_offsets; the answer is COORDINATOR_NOT_AVAILABLE until it leads.
      for (;;) {
        const r = await b.call<FindCoordinatorResponse>(conn, 10, 4, {
          key: '',
          keyType: 0,
          coordinatorKeys: ['g'],
        });
        if (r.coordinators[0]!.errorCode !== ErrorCode.COORDINATOR_NOT_AVAILABLE || listener === 'HIDDEN')
          return r;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    };
    for (const listener of ['PLAINTEXT', 'INTERNAL']) {
      const r = await find(listener);
      assert.equal(r.coordinators[0]!.errorCode, 0);
      assert.equal(r.coordinators[0]!.port, ports.get(listener));
    }
    const hidden = await find('HIDDEN');
    assert.equal(hidden.coordinators[0]!.errorCode, ErrorCode.COORDINATOR_NOT_AVAILABLE);
  });
});

describe('max.connections over several listeners', () => {
  it('is one limit for the whole broker, as in Kafka', async () => {
    const b = await startBroker({
      listeners: 'PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:0',
      'listener.security.protocol.map': 'PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT',
      'max.connections': '1',
    });
    const ports = new Map([...b.broker.addresses].map(([name, a]) => [name, a.port]));
    const first = await ClientConnection.connect('127.0.0.1', ports.get('PLAINTEXT')!, { clientId: 'one' });
    try {
      const second = await ClientConnection.connect('127.0.0.1', ports.get('INTERNAL')!, { clientId: 'two' });
      // Accepted by the kernel, closed by the broker at once: the close is what this connection sees.
      await second.closed();
      assert.match(
        b.logger.lines.join('\n'),
        /rejecting connection from 127\.0\.0\.1:\d+ on listener INTERNAL: max.connections 1 reached/,
      );
    } finally {
      first.close();
      await b.stop();
    }
  });
});

describe('max.connections.per.ip', () => {
  /** A raw socket from `localAddress`: resolves with its ApiVersions v0 answer's size, or null if the broker closed it. */
  const apiVersionsFrom = (port: number, localAddress: string): Promise<net.Socket | null> =>
    new Promise((resolve, reject) => {
      const socket = net.connect({ host: '127.0.0.1', port, localAddress });
      socket.once('error', reject);
      socket.once('connect', () => {
        // size 10: ApiVersions (18) v0, correlation id 1, null client id.
        socket.write(Buffer.from([0, 0, 0, 10, 0, 18, 0, 0, 0, 0, 0, 1, 0xff, 0xff]));
      });
      socket.once('data', () => resolve(socket));
      socket.once('close', () => resolve(null));
    });

  it("refuses a connection beyond the limit from one address with Kafka's line, not from another; a dynamic change applies to the next accept", async () => {
    const b = await startBroker({ 'max.connections.per.ip': '1' });
    const port = b.broker.address.port;
    const open: net.Socket[] = [];
    try {
      const first = await apiVersionsFrom(port, '127.0.0.1');
      assert.ok(first);
      open.push(first);
      assert.equal(await apiVersionsFrom(port, '127.0.0.1'), null, 'a second one from 127.0.0.1');
      assert.match(
        b.logger.lines.join('\n'),
        /Rejected connection from \/127\.0\.0\.1, address already has the configured maximum of 1 connections\./,
      );
      const other = await apiVersionsFrom(port, '127.0.0.2');
      assert.ok(other, 'another address has its own count');
      open.push(other);
      // Raised at run time (IncrementalAlterConfigs on this broker), for the next accept; the
      // first socket makes room for the admin connection once the broker has seen it close.
      first.destroy();
      let altered = false;
      for (let i = 0; i < 50 && !altered; i++) {
        const conn = await ClientConnection.connect('127.0.0.1', port, { clientId: 'admin' });
        try {
          const r = await b.call<{ responses: { errorCode: number }[] }>(conn, 44, 1, {
            resources: [
              {
                resourceType: 4,
                resourceName: '1',
                configs: [{ name: 'max.connections.per.ip', configOperation: 0, value: '2' }],
              },
            ],
            validateOnly: false,
          });
          assert.equal(r.responses[0]!.errorCode, 0);
          altered = true;
        } catch (e) {
          if (e instanceof assert.AssertionError) throw e;
          await new Promise((r) => setTimeout(r, 100));
        } finally {
          conn.close();
        }
      }
      assert.ok(altered);
      const held = await apiVersionsFrom(port, '127.0.0.1');
      assert.ok(held);
      open.push(held);
      let again: net.Socket | null = null;
      for (let i = 0; i < 50 && again === null; i++) {
        again = await apiVersionsFrom(port, '127.0.0.1');
        if (again === null) await new Promise((r) => setTimeout(r, 100));
      }
      assert.ok(again, 'a second connection from 127.0.0.1 once the limit is 2');
      open.push(again);
    } finally {
      for (const s of open) s.destroy();
      await b.stop();
    }
  });
});

describe('an SSL listener without a key store', () => {
  it('stops the start with the listener named, before anything is written', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'skiff-no-keystore-'));
    try {
      await assert.rejects(
        startBroker({ listeners: 'PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0' }, dir),
        /^Error: listener SSL: SSL key store is not specified/,
      );
      assert.equal(fs.existsSync(path.join(dir, 'logs')), false);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
