import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import type { LookupAddress } from 'node:dns';
import sharp from 'sharp';
import { loadSettings, SettingsError } from '../src/config/settings.ts';
import { AllowedHosts, isPublicUnicast, OutboundUrlPolicy } from '../src/core/outbound-urls.ts';
import { ApiError } from '../src/core/errors.ts';
import { OutboundFetcher, OutboundFetchError, UrlNotAllowedError } from '../src/tasks/outbound-fetch.ts';
import { startTestServer, type TestServer } from './support/server.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

/** A listener that only counts the connections it gets: a target the gateway must never reach. */
interface Trap {
  host: string;
  port: number;
  connections: number;
  close(): Promise<void>;
}

async function trap(host: string): Promise<Trap> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    result.connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.end('HTTP/1.1 404 Not Found\r\ncontent-length: 6\r\n\r\nsecret');
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const result: Trap = {
    host,
    port: (server.address() as net.AddressInfo).port,
    connections: 0,
    close: () => new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy();
      server.close(() => resolve());
    }),
  };
  return result;
}

/** An image server on an address the gateway trusts, with redirects to wherever a test needs. */
async function imageServer(host: string, png: Buffer, redirects: Record<string, () => string>): Promise<{ url: string; port: number; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    const path = req.url ?? '/';
    const target = redirects[path];
    if (target) {
      res.writeHead(302, { location: target() }).end();
    } else if (path === '/image.png') {
      res.writeHead(200, { 'content-type': 'image/png', 'content-length': png.length }).end(png);
    } else if (path === '/slow.png') {
      // Never answers: the fetch timeout has to end it.
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    url: `http://${host}:${port}`,
    port,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

function refusedWith(param: string): (err: unknown) => boolean {
  return (err) => {
    assert.ok(err instanceof ApiError, String(err));
    assert.equal(err.code, 'url_not_allowed');
    assert.equal(err.status, 400);
    assert.equal(err.param, param);
    return true;
  };
}

describe('outbound URL policy: the address ranges', () => {
  it('refuses every non-public range, IPv4-mapped and IPv6 forms included', () => {
    const refused = [
      '127.0.0.1', '127.255.255.254', '::1', '::ffff:127.0.0.1', '::ffff:7f00:1', '0:0:0:0:0:ffff:7f00:1',
      '10.1.2.3', '172.16.0.1', '172.31.255.255', '192.168.1.1', '::ffff:10.0.0.1', '::ffff:192.168.0.1',
      '169.254.169.254', '::ffff:169.254.169.254', 'fe80::1', '100.64.0.1', '100.127.255.255',
      'fc00::1', 'fd12:3456::1', '224.0.0.1', 'ff02::1', '0.0.0.0', '::', '255.255.255.255', '240.0.0.1',
      '192.0.2.1', '198.18.0.1', '2001:db8::1', '64:ff9b::7f00:1',
    ];
    for (const address of refused) assert.equal(isPublicUnicast(address), false, address);
    for (const address of ['8.8.8.8', '1.1.1.1', '172.32.0.1', '100.128.0.1', '2001:4860:4860::8888', '::ffff:8.8.8.8', '2a00:1450::1']) {
      assert.equal(isPublicUnicast(address), true, address);
    }
    assert.equal(isPublicUnicast('localhost'), false);
  });

  it('FETCH_ALLOW_HOSTS takes names, addresses and CIDR ranges; mapped addresses match IPv4 entries', () => {
    const allowed = AllowedHosts.parse(' Images.Internal. , 10.0.0.0/8, 192.168.1.5, [fd00::1], ::ffff:172.16.0.0/108 ');
    assert.equal(allowed.hasName('images.internal'), true);
    assert.equal(allowed.hasName('other.internal'), false);
    for (const address of ['10.9.8.7', '::ffff:10.9.8.7', '192.168.1.5', 'fd00::1', '172.16.3.4']) assert.equal(allowed.hasAddress(address), true, address);
    for (const address of ['11.0.0.1', '192.168.1.6', 'fd00::2', '172.32.0.1']) assert.equal(allowed.hasAddress(address), false, address);
    assert.throws(() => AllowedHosts.parse('10.0.0.0/33'), /not a CIDR range/);
    assert.throws(() => AllowedHosts.parse('bad_host!'), /neither a host name/);
    assert.throws(() => loadSettings({ FETCH_ALLOW_HOSTS: 'a b' }), SettingsError);
    assert.equal(loadSettings({}).fetchTimeoutMs, 30_000);
    assert.equal(loadSettings({ FETCH_TIMEOUT_MS: '1500' }).fetchTimeoutMs, 1500);
  });

  it('checkCallerUrl refuses literal non-public hosts in every spelling, localhost and other schemes', () => {
    const policy = new OutboundUrlPolicy({ allowed: AllowedHosts.parse('10.1.0.0/16,builds.internal'), isOwnFile: (url) => url.href.startsWith('http://127.0.0.1:8080/files/') });
    const refused = [
      'http://127.0.0.1/x.png', 'http://2130706433/', 'http://0177.0.0.1/', 'http://0x7f000001/', 'http://0x7f.1/',
      'http://localhost/', 'http://LOCALHOST./x', 'http://api.localhost/', 'http://0.0.0.0:80/', 'http://[::1]/', 'http://[::ffff:127.0.0.1]/',
      'http://169.254.169.254/latest/meta-data/', 'https://10.0.0.1/', 'http://[fe80::1]/', 'http://127.0.0.1:8080/admin/tokens',
      'ftp://example.com/x.png', 'file:///etc/passwd', 'gopher://example.com/', 'ws://example.com/',
    ];
    for (const url of refused) assert.throws(() => policy.checkCallerUrl(url, 'image'), refusedWith('image'), url);
    const accepted = [
      'https://example.com/x.png', 'http://93.184.216.34/x.png', 'http://[2001:4860::1]/', 'http://10.1.2.3/x.png', 'http://builds.internal/x.png',
      'http://127.0.0.1:8080/files/abc/x.png', 'data:image/png;base64,iVBORw0KGgo=', `blake3:${'a'.repeat(64)}`, 'not a url at all',
    ];
    for (const url of accepted) assert.doesNotThrow(() => policy.checkCallerUrl(url, 'image'), url);
  });
});

describe('outbound URL policy through the gateway', () => {
  let srv: TestServer;
  let token: string;
  /** 127.0.0.1: refused for this server, and what images.example.com resolves to. */
  let loopback: Trap;
  /** 127.0.0.2: the target of a redirect from a trusted host. */
  let redirected: Trap;
  /** On 127.0.0.3, which FETCH_ALLOW_HOSTS trusts. */
  let images: Awaited<ReturnType<typeof imageServer>>;
  /** On 127.0.0.4, trusted only under the name trusted.example.com. */
  let named: Awaited<ReturnType<typeof imageServer>>;
  let taskEvents = 0;
  const lookups: string[] = [];

  const RESOLVES: Record<string, string[]> = {
    'images.example.com': ['127.0.0.1'],
    'mixed.example.com': ['93.184.216.34', '127.0.0.1'],
    'metadata.example.com': ['169.254.169.254'],
    'trusted.example.com': ['127.0.0.4'],
  };

  async function resolveHost(hostname: string): Promise<LookupAddress[]> {
    lookups.push(hostname);
    const addresses = RESOLVES[hostname];
    if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return addresses.map((address) => ({ address, family: net.isIP(address) }));
  }

  before(async () => {
    const png = await sharp({ create: { width: 16, height: 16, channels: 3, background: { r: 10, g: 120, b: 200 } } }).png().toBuffer();
    loopback = await trap('127.0.0.1');
    redirected = await trap('127.0.0.2');
    const redirects = {
      '/to-refused': () => `http://127.0.0.2:${redirected.port}/x.png`,
      '/to-refused-name': () => `http://images.example.com:${loopback.port}/x.png`,
      '/to-file-scheme': () => 'file:///etc/passwd',
      '/to-image': () => '/image.png',
      '/loop': () => '/loop',
    };
    images = await imageServer('127.0.0.3', png, redirects);
    named = await imageServer('127.0.0.4', png, {});
    srv = await startTestServer({ FETCH_ALLOW_HOSTS: '127.0.0.3, trusted.example.com', FETCH_TIMEOUT_MS: '1000' }, { resolveHost });
    token = await srv.tokenFor('outbound');
    srv.server.services.bus.subscribe('task.status', () => taskEvents++);
  });

  after(async () => {
    await srv?.close();
    await Promise.all([loopback?.close(), redirected?.close(), images?.close(), named?.close()]);
  });

  const post = (path: string, body: Json, headers: Record<string, string> = {}) => srv.fetch(path, { method: 'POST', token, json: body, headers });
  const edit = (image: string | string[], extra: Json = {}) => post('/v1/images/edits', { model: 'seedream-4.0', prompt: 'make it brighter', image, size: '16x16', ...extra });

  async function expectRefused(res: Response, param: string): Promise<void> {
    const body: Json = await res.json();
    assert.equal(res.status, 400, JSON.stringify(body));
    assert.equal(body.error.code, 'url_not_allowed', body.error.message);
    assert.equal(body.error.type, 'invalid_request_error');
    assert.equal(body.error.param, param, body.error.message);
  }

  /** A sync edit whose input fetch is refused: 502, the task failed with exactly the policy's message. */
  async function expectFailedFetch(image: string, message: string | RegExp): Promise<void> {
    const res = await edit(image);
    const body: Json = await res.json();
    assert.equal(res.status, 502, JSON.stringify(body));
    const record: Json = await (await srv.fetch(`/v1/ai/result/${body.error.task_id}`, { token })).json();
    assert.equal(record.queue_status.status, 'failed');
    if (typeof message === 'string') assert.equal(record.queue_status.message, message);
    else assert.match(record.queue_status.message, message);
    assert.ok(!JSON.stringify(body.error).includes('secret') && !/HTTP \d/.test(record.queue_status.message), record.queue_status.message);
  }

  it('refuses literal non-public hosts with 400 url_not_allowed naming the field, before any task exists', async () => {
    const port = loopback.port;
    const literals = [
      `http://127.0.0.1:${port}/x.png`, `http://localhost:${port}/x.png`, `http://0.0.0.0:${port}/x.png`, `http://[::1]:${port}/x.png`,
      `http://[::ffff:127.0.0.1]:${port}/x.png`, `http://2130706433:${port}/x.png`, 'http://169.254.169.254/latest/meta-data/', 'http://10.0.0.7/x.png',
    ];
    const eventsBefore = taskEvents;
    for (const url of literals) await expectRefused(await edit(url), 'image');
    await expectRefused(await edit([`${images.url}/image.png`, `http://127.0.0.1:${port}/x.png`]), 'image[1]');
    await expectRefused(await edit(`${images.url}/image.png`, { mask: 'file:///etc/passwd' }), 'mask');

    const video = (url: string) => post('/v1/video/generations', {
      model: 'seedance-1.0-lite-i2v', duration: 1, resolution: '480p',
      content: [{ type: 'text', text: 'a slow pan' }, { type: 'image_url', image_url: { url }, role: 'first_frame' }],
    });
    await expectRefused(await video(`http://127.0.0.1:${port}/frame.png`), 'content[1].image_url.url');
    await expectRefused(await video('ftp://example.com/frame.png'), 'content[1].image_url.url');

    const chat = (content: Json[]) => post('/v1/chat/completions', { model: 'gpt-4.1', stream: false, messages: [{ role: 'user', content }] });
    await expectRefused(await chat([{ type: 'text', text: 'what is this?' }, { type: 'image_url', image_url: { url: `http://[::1]:${port}/x.png` } }]), 'messages[0].content[1].image_url.url');
    await expectRefused(await chat([{ type: 'file_url', file_url: { url: 'ftp://example.com/report.pdf' } }]), 'messages[0].content[0].file_url.url');

    await expectRefused(await post('/v1/mesh3d/generate/image', { model: 'tripo-v3.1', file: { url: 'http://169.254.169.254/latest/meta-data/' } }), 'file.url');
    await expectRefused(await post('/v1/mesh3d/generate/multiview', {
      model: 'tripo-v3.1',
      view_images: [{ view_type: 'front', file: { url: `${images.url}/image.png` } }, { view_type: 'left', file: { url: 'http://192.168.0.10/left.png' } }],
    }), 'view_images[1].file.url');

    await expectRefused(await post('/v1/digital-human/generations', { model: 'volc-digital-human-lite', resource_id: 'dh_unknown', audio_url: `http://localhost:${port}/speech.wav` }), 'audio_url');
    await expectRefused(await post('/v1/digital-human/generations', { model: 'volc-digital-human-lite', resource_id: 'dh_unknown', audio_url: 'gopher://example.com/speech.wav' }), 'audio_url');
    await expectRefused(await post('/v1/digital-human/create', { model: 'volc-digital-human-lite', video_id: `http://127.0.0.1:${port}/source.mp4` }), 'video_id');

    assert.equal(taskEvents, eventsBefore, 'no task was created');
    assert.equal(loopback.connections, 0, 'nothing connected to the refused address');
  });

  it('fails the task with "input URL not allowed" when a name resolves to a refused address, without connecting', async () => {
    await expectFailedFetch(`http://images.example.com:${loopback.port}/x.png`, 'input URL not allowed');
    // One public address does not make up for a private one.
    await expectFailedFetch(`http://mixed.example.com:${loopback.port}/x.png`, 'input URL not allowed');
    await expectFailedFetch('http://metadata.example.com/latest/meta-data/', 'input URL not allowed');
    assert.ok(lookups.includes('images.example.com') && lookups.includes('mixed.example.com'), 'the names were resolved');
    assert.equal(loopback.connections, 0, 'nothing connected to what the names resolve to');
  });

  it('checks every redirect: one to a refused address or name, or to another scheme, fails the task without connecting', async () => {
    await expectFailedFetch(`${images.url}/to-refused`, 'input URL not allowed');
    await expectFailedFetch(`${images.url}/to-refused-name`, 'input URL not allowed');
    await expectFailedFetch(`${images.url}/to-file-scheme`, 'input URL not allowed');
    assert.equal(redirected.connections, 0, 'nothing connected to the redirect target');
    assert.equal(loopback.connections, 0);
    await expectFailedFetch(`${images.url}/loop`, /redirected more than 5 times/);
  });

  it('fetches from trusted addresses and names, following redirects, and bounds a fetch by FETCH_TIMEOUT_MS', async () => {
    const eventsBefore = taskEvents;
    for (const url of [`${images.url}/image.png`, `${images.url}/to-image`, `http://trusted.example.com:${named.port}/image.png`]) {
      const res = await edit(url);
      assert.equal(res.status, 200, `${url}: ${await res.text()}`);
    }
    assert.ok(taskEvents > eventsBefore, 'accepted edits are tasks');
    const started = Date.now();
    await expectFailedFetch(`${images.url}/slow.png`, /took longer than 1000 ms/);
    assert.ok(Date.now() - started < 10_000);
  });
});

describe('OutboundFetcher', () => {
  it('refuses a body over the size limit, and literal refused hosts before connecting', async () => {
    const png = Buffer.alloc(4096, 1);
    const server = await imageServer('127.0.0.3', png, {});
    const target = await trap('127.0.0.2');
    const fetcher = new OutboundFetcher({ policy: new OutboundUrlPolicy({ allowed: AllowedHosts.parse('127.0.0.3'), isOwnFile: () => false }), maxBytes: 1000, timeoutMs: 5000 });
    try {
      await assert.rejects(fetcher.get(new URL(`${server.url}/image.png`)), (err) => err instanceof OutboundFetchError && /larger than 1000 bytes/.test(err.message));
      await assert.rejects(fetcher.get(new URL(`http://127.0.0.2:${target.port}/x`)), UrlNotAllowedError);
      assert.equal(target.connections, 0);
    } finally {
      await fetcher.close();
      await Promise.all([server.close(), target.close()]);
    }
  });
});
