// @platformatic/kafka transactions against the writable replay broker (tests/test_serve_transactions.py):
// one transactional producer writes to partitions 0 and 1 of a topic and commits, then aborts, then
// commits together with a consumer group's offset (addConsumer/addOffset, i.e. sendOffsetsToTransaction).
// Then a read_committed consumer reads the topic. Prints JSON: committed, aborted, read.
import { Consumer, Producer, stringSerializers, stringDeserializers } from '@platformatic/kafka'
const [broker, topic, groupId, txnId, compression] = process.argv.slice(2)
const producer = new Producer({ clientId: 'kfx-platformatic-txn', bootstrapBrokers: [broker], idempotent: true,
                                transactionalId: txnId, serializers: stringSerializers, retries: 2 })
const out = { committed: [], aborted: [] }
const msgs = (tag, n) => [0, 1].flatMap(p => Array.from({ length: n }, (_, i) => ({ topic, partition: p, key: 'k', value: `${tag}-${p}-${i}` })))
const timer = setTimeout(() => { console.error('timed out'); process.exit(2) }, 60000)

let t = await producer.beginTransaction()
let m = msgs('commit', 3)
await t.send({ messages: m, compression })
await t.commit()
out.committed.push(...m.map(x => x.value))

t = await producer.beginTransaction()
m = msgs('abort', 2)
await t.send({ messages: m, compression })
await t.abort()
out.aborted.push(...m.map(x => x.value))

// commit with offsets: a consumer of the topic reads one record; its offset joins the transaction
const consumer = new Consumer({ groupId, clientId: 'kfx-platformatic-txn-c', bootstrapBrokers: [broker],
                                deserializers: stringDeserializers })
const stream = await consumer.consume({ autocommit: false, topics: [topic], mode: 'earliest', sessionTimeout: 10000,
                                        heartbeatInterval: 500 })
const first = await new Promise((resolve, reject) => { stream.once('data', resolve); stream.once('error', reject) })
t = await producer.beginTransaction()
m = msgs('offsets', 1)
await t.send({ messages: m, compression })
await t.addConsumer(consumer)
await t.addOffset(first)
await t.commit()
out.committed.push(...m.map(x => x.value))
out.offset = { partition: first.partition, offset: Number(first.offset) + 1 }
await stream.close()
await consumer.close(true)
await producer.close()
// a read_committed consumer (the client's default isolation) of a new group reads the topic
const reader = new Consumer({ groupId: groupId + '-reader', clientId: 'kfx-platformatic-reader', bootstrapBrokers: [broker],
                              deserializers: stringDeserializers })
const rs = await reader.consume({ autocommit: false, topics: [topic], mode: 'earliest', sessionTimeout: 10000, heartbeatInterval: 500 })
out.read = []
await new Promise(resolve => {
  const stop = setTimeout(resolve, 8000)
  rs.on('data', r => { out.read.push(r.value); if (out.read.length >= out.committed.length) { clearTimeout(stop); setTimeout(resolve, 500) } })
})
await rs.close()
await reader.close(true)
clearTimeout(timer)
console.log(JSON.stringify(out))
process.exit(0)
