/**
 * `skiff broker` on an etcd that lets in only who belongs (issue 21): members serving https with
 * client certificates required, and members with etcd's own users (auth enabled). The broker
 * authenticates with etcd.ssl.* / etcd.username / etcd.password, registers, and serves a topic;
 * without its certificate, or with a wrong password, it refuses to start with one clear line.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { EtcdCluster } from '../support/etcd.js';
import { makeTestCerts, type TestCerts } from '../support/tls-certs.js';
import { freePorts, kcat, removeDataDir, requireTool, SkiffProcess } from './helpers.js';

describe('skiff broker on an etcd with TLS and users', () => {
  let certs: TestCerts;
  let dir: string;
  const processes: SkiffProcess[] = [];

  before(() => {
    requireTool('kcat', '-V');
    certs = makeTestCerts();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'skiff-etcd-security-'));
  });
  after(async () => {
    await Promise.all(processes.map((p) => p.kill()));
    removeDataDir(dir);
    certs?.remove();
  });

  const tlsOf = (clientCertAuth: boolean) => ({
    caFile: certs.caPem,
    // The broker's certificate names 127.0.0.1: the members serve it.
    certFile: certs.brokerCert,
    keyFile: certs.brokerKey,
    clientCertAuth,
    clientCertFile: certs.clientCert,
    clientKeyFile: certs.clientKey,
  });

  /** Starts `skiff broker` on `etcd` with `extra` properties; resolves with it once ready, or its failure. */
  const broker = async (
    etcd: EtcdCluster,
    name: string,
    extra: readonly string[],
  ): Promise<{ p: SkiffProcess; port: number }> => {
    const [port] = [await freePorts(1)];
    const props = path.join(dir, `${name}.properties`);
    fs.writeFileSync(
      props,
      [
        'node.id=1',
        `listeners=PLAINTEXT://127.0.0.1:${port}`,
        `log.dirs=${path.join(dir, name)}`,
        `etcd.endpoints=${etcd.endpoints.join(',')}`,
        'offsets.topic.replication.factor=1',
        ...extra,
        '',
      ].join('\n'),
    );
    const p = new SkiffProcess(['broker', '--config', props]);
    processes.push(p);
    return { p, port: port! };
  };

  const serves = async (port: number, topic: string): Promise<void> => {
    const produced = await kcat(['-b', `127.0.0.1:${port}`, '-P', '-t', topic], 'over etcd with TLS\n');
    assert.equal(produced.status, 0, produced.stderr);
    const consumed = await kcat(['-b', `127.0.0.1:${port}`, '-C', '-t', topic, '-o', 'beginning', '-e']);
    assert.equal(consumed.stdout, 'over etcd with TLS\n', consumed.stderr);
  };

  it('client certificates required: the broker with its certificate serves; without it, one line and exit 1', async () => {
    const etcd = await EtcdCluster.start(1, 20_000, tlsOf(true));
    try {
      const good = await broker(etcd, 'mtls', [
        `etcd.ssl.ca.location=${certs.caPem}`,
        `etcd.ssl.certificate.location=${certs.clientCert}`,
        `etcd.ssl.key.location=${certs.clientKey}`,
        'auto.create.topics.enable=true',
      ]);
      await good.p.waitFor(/skiff broker 1 ready: listening on/, 30_000);
      await serves(good.port, 'mtls-topic');
      // The metadata is in etcd, under Skiff's keys.
      assert.match(etcd.etcdctl(['get', '--prefix', '--keys-only', '']), /mtls-topic/);
      await good.p.kill();

      const missing = await broker(etcd, 'mtls-missing', ['etcd.ssl.certificate.location=/nonexistent.pem']);
      const exit = await missing.p.exited;
      assert.equal(exit.code, 1);
      assert.match(missing.p.output(), /etcd.ssl.certificate.location: cannot read \/nonexistent.pem/);
      assert.doesNotMatch(missing.p.output(), /^\s+at /m, 'one line, no stack trace');
    } finally {
      etcd.stop();
    }
  });

  it('etcd users: the broker as its user serves; a wrong password is refused at start-up', async () => {
    const etcd = await EtcdCluster.start(1, 20_000, tlsOf(false));
    try {
      etcd.etcdctl(['user', 'add', 'root:root-secret']);
      etcd.etcdctl(['user', 'add', 'skiff:skiff-secret']);
      etcd.etcdctl(['role', 'add', 'skiff']);
      etcd.etcdctl(['role', 'grant-permission', 'skiff', '--prefix=true', 'readwrite', '']);
      etcd.etcdctl(['user', 'grant-role', 'skiff', 'skiff']);
      etcd.etcdctl(['auth', 'enable']);
      const tls = [`etcd.ssl.ca.location=${certs.caPem}`];
      const good = await broker(etcd, 'users', [
        ...tls,
        'etcd.username=skiff',
        'etcd.password=skiff-secret',
        'auto.create.topics.enable=true',
      ]);
      await good.p.waitFor(/skiff broker 1 ready: listening on/, 30_000);
      await serves(good.port, 'users-topic');
      await good.p.kill();

      const wrong = await broker(etcd, 'users-wrong', [...tls, 'etcd.username=skiff', 'etcd.password=nope']);
      const exit = await wrong.p.exited;
      assert.notEqual(exit.code, 0);
      assert.match(
        wrong.p.output(),
        /etcd at https:\/\/127\.0\.0\.1:\d+: .*(authentication failed|invalid)/i,
      );
      const anonymous = await broker(etcd, 'users-anonymous', tls);
      assert.notEqual((await anonymous.p.exited).code, 0);
    } finally {
      etcd.stop();
    }
  });
});
