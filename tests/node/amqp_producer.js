// A third-party AMQP 1.0 producer for the live tests (tests/live/test_thirdparty.py): sends the
// fixed set of messages of `messages()` through rhea or rhea-promise, each one to every --queue
// given (the same message, so that msgcap and a JMS consumer each read one copy), and prints
// "sent N messages".
//
//   node amqp_producer.js --client rhea|rhea-promise --port PORT --first N --queue A --queue B
//
// The messages use what rhea's API can express: typed application properties of every AMQP
// type (rhea.types), message ids and correlation ids of each kind (strings without "ID:", as
// rhea sends them, ulong, uuid, binary, a string that looks encoded), group-id and
// group-sequence, user-id, subject, content-type with a charset over a data section,
// priorities, durability, creation and absolute expiry times. Each body is a SALES.CUSTOMER
// insert (the delimited example) whose id column is the message's number.
'use strict';
const rhea = require('rhea');
const types = rhea.types;

function options(argv) {
    const o = {queue: []};
    for (let i = 2; i < argv.length; i += 2) {
        const name = argv[i].replace(/^--/, '');
        if (name === 'queue') o.queue.push(argv[i + 1]); else o[name] = argv[i + 1];
    }
    return o;
}

const uuidOf = (text) => rhea.string_to_uuid(text);
const CREATED = 1700000000123;
const EXPIRES = 4102444800000; // 2100-01-01, far beyond any test run

function insert(n, name) {
    return `I,SALES.CUSTOMER,2024-03-01 10:15:30.000000,W,${String(n).padStart(10, '0')},${n},` +
        `${name},City ${n % 97},2024-03-01 10:15:30\n`;
}

// Every AMQP type rhea.types has, as application properties, and values whose text differs
// between languages (Java's Double.toString, the unsigned types, a timestamp).
function typedProperties(n) {
    return {
        p_int: types.wrap_int(-42), p_short: types.wrap_short(12), p_byte: types.wrap_byte(-3),
        p_ubyte: types.wrap_ubyte(200), p_ushort: types.wrap_ushort(65535),
        p_uint: types.wrap_uint(4294967295), p_ulong: types.wrap_ulong(18),
        p_ulong_max: types.wrap_ulong(Buffer.from('ffffffffffffffff', 'hex')),
        p_long: types.wrap_long(123456789012), p_float: types.wrap_float(0.5),
        p_float_tenth: types.wrap_float(0.1), p_double: types.wrap_double(1e20),
        p_double_tenth: types.wrap_double(0.1), p_double_small: types.wrap_double(1.5e-5),
        p_boolean: types.wrap_boolean(true), p_false: types.wrap_boolean(false),
        p_timestamp: types.wrap_timestamp(1700000000999), p_char: types.wrap_char(0xe9),
        p_uuid: types.wrap_uuid(uuidOf('6ba7b810-9dad-11d1-80b4-00c04fd430c8')),
        p_null: null, p_symbol: types.wrap_symbol('a-symbol'),
        p_string: 'h\u00e9llo, "world"', TableName: 'CUSTOMER', JMSTxId: `tx-${n}`, seq: n,
    };
}

// The fixed set: one message per entry, numbered first, first + 1, ... in the order a broker
// delivers them (highest priority first), so that the numbers (msgcap's seqids) ascend.
function messages(first) {
    const all = [];
    const add = (fill) => { const n = first + all.length; all.push(fill(n)); };
    add((n) => ({  // uuid ids
        message_id: types.wrap_uuid(uuidOf('f81d4fae-7dec-11d0-a765-00a0c91e6bf6')),
        correlation_id: types.wrap_uuid(uuidOf('01234567-89ab-cdef-0123-456789abcdef')),
        priority: 9, durable: false, application_properties: {p_float: types.wrap_float(1e10)},
        body: insert(n, 'Uuid'),
    }));
    add((n) => ({  // string id without ID: (rhea's own kind), every typed property, latin-1
        message_id: `rhea-${n}`, correlation_id: `order-${n}`, subject: 'Order',
        group_id: 'orders-7', group_sequence: 1, user_id: Buffer.from('alice'), reply_to: 'replies',
        creation_time: CREATED, absolute_expiry_time: EXPIRES, priority: 7, durable: true,
        content_type: 'text/plain;charset=iso-8859-1', application_properties: typedProperties(n),
        body: rhea.message.data_section(Buffer.from(insert(n, 'M\u00fcller'), 'latin1')),
    }));
    add((n) => ({  // binary ids
        message_id: types.wrap_binary(Buffer.from([0x00, 0xab, 0xcd, n & 0xff])),
        correlation_id: types.wrap_binary(Buffer.from('corr')),
        application_properties: {p_double: types.wrap_double(123456789.0)},
        body: rhea.message.data_section(Buffer.from(insert(n, 'Binary'))),
    }));
    add((n) => ({  // strings that look encoded: escaped by JMS
        message_id: 'ID:AMQP_ULONG:7', correlation_id: 'ID:AMQP_UUID:not-a-uuid',
        content_type: 'text/plain;charset=utf-8', subject: 'Escaped',
        body: rhea.message.data_section(Buffer.from(insert(n, 'Escaped'))),
    }));
    add((n) => ({  // a JMS-style id and correlation id, as is; a group without a sequence
        message_id: `ID:rhea-host-1:1:${n}`, correlation_id: `ID:rhea-host-1:1:${n - 1}`,
        group_id: 'orders-8', priority: 4, creation_time: CREATED + n,
        application_properties: {p_char: types.wrap_char(0x41), p_empty: ''},
        body: insert(n, 'Plain'),
    }));
    add((n) => ({  // nothing but a body: no id, no header, no properties
        body: insert(n, 'Bare'),
    }));
    add((n) => ({  // an amqp-value binary body
        message_id: `bin-value-${n}`, body: types.wrap_binary(Buffer.from(insert(n, 'Value'))),
    }));
    add((n) => ({  // ulong ids
        message_id: 7000 + n, correlation_id: types.wrap_ulong(7), group_id: 'orders-7',
        group_sequence: 2, priority: 0, durable: true, creation_time: CREATED,
        application_properties: {p_int: types.wrap_int(n), p_double: types.wrap_double(-0.0)},
        body: insert(n, 'Ulong'),
    }));
    return all;
}

async function sendRhea(o, batch) {
    const container = rhea.create_container();
    const connection = container.connect({host: '127.0.0.1', port: Number(o.port),
                                          reconnect: false});
    const senders = o.queue.map((q) => connection.open_sender(
        {target: {address: q, capabilities: ['queue']}}));
    let confirmed = 0;
    const total = batch.length * senders.length;
    await new Promise((resolve, reject) => {
        container.on('accepted', () => { if (++confirmed === total) resolve(); });
        for (const bad of ['rejected', 'released', 'modified']) {
            container.on(bad, (ctx) => reject(new Error(`message ${bad}: ${ctx.delivery.remote_state}`)));
        }
        container.on('error', reject);
        container.on('connection_error', (ctx) => reject(ctx.connection.error));
        let opened = 0;
        container.on('sendable', (ctx) => {
            if (ctx.sender.sent) return;
            ctx.sender.sent = true;
            for (const m of batch) ctx.sender.send(m);
            if (++opened > senders.length) reject(new Error('sendable twice'));
        });
    });
    connection.close();
}

async function sendRheaPromise(o, batch) {
    const {Connection} = require('rhea-promise');
    const connection = new Connection({host: '127.0.0.1', port: Number(o.port),
                                       reconnect: false});
    await connection.open();
    for (const q of o.queue) {
        const sender = await connection.createAwaitableSender(
            {target: {address: q, capabilities: ['queue']}});
        for (const m of batch) await sender.send(m);  // resolves once the broker accepted it
        await sender.close();
    }
    await connection.close();
}

async function main() {
    const o = options(process.argv);
    const batch = messages(Number(o.first || 1));
    await (o.client === 'rhea-promise' ? sendRheaPromise : sendRhea)(o, batch);
    console.log(`sent ${batch.length} messages`);
    process.exit(0);
}

main().catch((e) => { console.error(`amqp_producer: ${e && e.stack || e}`); process.exit(1); });
