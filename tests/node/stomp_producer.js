// A third-party STOMP producer for the live tests (tests/live/test_thirdparty.py): sends the
// fixed set of frames of `frames()` through stompit or @stomp/stompjs (over `TcpWebSocket`, a
// WebSocket shim on a plain TCP socket, as stompjs speaks only through a WebSocket), waits for
// the broker's receipt, and prints "sent N messages".
//
//   node stomp_producer.js --client stompit|stompjs --port PORT --first N --destination D
//
// The frames use what a STOMP producer sets: custom headers (numbers, booleans, text), values
// that need STOMP 1.1+ escapes (":", "\", a line break), content types with a charset, bodies
// with and without content-length, persistent, priority, expires, type, correlation-id,
// JMSXGroupID, reply-to. Each body is a SALES.CUSTOMER insert whose id column is its number.
'use strict';
const net = require('net');

function options(argv) {
    const o = {};
    for (let i = 2; i < argv.length; i += 2) o[argv[i].replace(/^--/, '')] = argv[i + 1];
    return o;
}

function insert(n, name) {
    return `I,SALES.CUSTOMER,2024-03-01 10:15:30.000000,W,${String(n).padStart(10, '0')},${n},` +
        `${name},City ${n % 97},2024-03-01 10:15:30\n`;
}

// {headers, body (text or Buffer)} per message, numbered first, first + 1, ...
function frames(first) {
    const all = [];
    const add = (fill) => all.push(fill(first + all.length));
    add((n) => ({headers: {persistent: 'true', priority: '4', 'correlation-id': `order-${n}`,
                           type: 'Order', JMSXGroupID: 'orders-7', JMSTxId: `tx-${n}`,
                           TableName: 'CUSTOMER', count: '42', ratio: '1.0E20', flag: 'true',
                           'x-escaped': 'a:b\\c\nd', 'reply-to': '/queue/replies'},
                 body: insert(n, 'Plain')}));
    add((n) => ({headers: {'content-type': 'text/plain;charset=utf-8', note: 'caf\u00e9',
                           'correlation-id': 'ID:not-a-jms-id', JMSXGroupID: 'orders-7'},
                 body: insert(n, 'Caf\u00e9')}));
    add((n) => ({headers: {'content-type': 'application/octet-stream', persistent: 'false',
                           expires: '4102444800000'},
                 body: Buffer.from(insert(n, 'Bytes'))}));
    add((n) => ({headers: {'content-type': 'text/plain;charset=iso-8859-1', empty: ''},
                 body: Buffer.from(insert(n, 'M\u00fcller'), 'latin1')}));
    return all;
}

function sendStompit(o, batch) {
    const stompit = require('stompit');
    return new Promise((resolve, reject) => {
        stompit.connect({host: '127.0.0.1', port: Number(o.port),
                         connectHeaders: {host: '/', 'accept-version': '1.2'}}, (err, client) => {
            if (err) return reject(err);
            client.on('error', reject);
            batch.forEach((m, i) => {
                const headers = Object.assign({destination: o.destination}, m.headers);
                if (Buffer.isBuffer(m.body)) headers['content-length'] = m.body.length;
                const last = i === batch.length - 1;
                const frame = client.send(headers, last ? {onReceipt: () => {
                    client.disconnect(); resolve();
                }} : undefined);
                frame.write(m.body);
                frame.end();
            });
        });
    });
}

// A WebSocket's face (what stompjs uses of one) on a TCP socket: text frames out as written,
// what comes in handed on as ArrayBuffers.
class TcpWebSocket {
    constructor(host, port) {
        this.readyState = 0;
        this.binaryType = 'arraybuffer';
        this.protocol = '';
        this.url = `tcp://${host}:${port}`;
        this.socket = net.connect(port, host, () => {
            this.readyState = 1;
            if (this.onopen) this.onopen({});
        });
        this.socket.on('data', (chunk) => {
            const data = chunk.buffer.slice(chunk.byteOffset, chunk.byteOffset + chunk.length);
            if (this.onmessage) this.onmessage({data});
        });
        this.socket.on('close', () => {
            this.readyState = 3;
            if (this.onclose) this.onclose({code: 1000, reason: '', wasClean: true});
        });
        this.socket.on('error', (e) => { if (this.onerror) this.onerror(e); });
    }

    send(data) { this.socket.write(typeof data === 'string' ? data : Buffer.from(data)); }

    close() { this.readyState = 2; this.socket.end(); }
}

async function sendStompjs(o, batch) {
    const {Client} = require('@stomp/stompjs');
    const client = new Client({
        webSocketFactory: () => new TcpWebSocket('127.0.0.1', Number(o.port)),
        connectHeaders: {host: '/'}, reconnectDelay: 0, heartbeatIncoming: 0,
        heartbeatOutgoing: 0,
    });
    await new Promise((resolve, reject) => {
        client.onStompError = (frame) => reject(new Error(frame.headers.message));
        client.onWebSocketError = reject;
        client.onConnect = () => {
            batch.forEach((m, i) => {
                const headers = Object.assign({}, m.headers);
                if (i === batch.length - 1) {
                    headers.receipt = 'last';
                    client.watchForReceipt('last', resolve);
                }
                const body = Buffer.isBuffer(m.body) ? {binaryBody: new Uint8Array(m.body)}
                    : {body: m.body};
                client.publish(Object.assign({destination: o.destination, headers}, body));
            });
        };
        client.activate();
    });
    await client.deactivate();
}

async function main() {
    const o = options(process.argv);
    const batch = frames(Number(o.first || 1));
    await (o.client === 'stompjs' ? sendStompjs : sendStompit)(o, batch);
    console.log(`sent ${batch.length} messages`);
    process.exit(0);
}

main().catch((e) => { console.error(`stomp_producer: ${e && e.stack || e}`); process.exit(1); });
