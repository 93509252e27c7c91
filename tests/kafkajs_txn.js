// KafkaJS transactions against the writable replay broker (tests/test_serve_transactions.py): one
// transactional producer writes to partitions 0 and 1 and commits, aborts, then commits together with a
// consumer group's offset (sendOffsets); then a read_committed consumer reads the topic. Prints JSON.
const { Kafka, logLevel } = require('kafkajs');
const [broker, topic, groupId, txnId] = process.argv.slice(2);
const kafka = new Kafka({ clientId: 'kfx-kafkajs-txn', brokers: [broker], logLevel: logLevel.ERROR, retry: { retries: 3 } });
const msgs = (tag, n) => [0, 1].flatMap(p => Array.from({ length: n }, (_, i) => ({ partition: p, key: 'k', value: `${tag}-${p}-${i}` })));
(async () => {
  const timer = setTimeout(() => { console.error('timed out'); process.exit(2); }, 60000);
  const producer = kafka.producer({ transactionalId: txnId, idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const out = { committed: [], aborted: [], read: [] };
  let t = await producer.transaction();
  let m = msgs('commit', 3);
  await t.send({ topic, messages: m });
  await t.commit();
  out.committed.push(...m.map(x => x.value));
  t = await producer.transaction();
  m = msgs('abort', 2);
  await t.send({ topic, messages: m });
  await t.abort();
  out.aborted.push(...m.map(x => x.value));
  t = await producer.transaction();
  m = msgs('offsets', 1);
  await t.send({ topic, messages: m });
  await t.sendOffsets({ consumerGroupId: groupId, topics: [{ topic, partitions: [{ partition: 0, offset: '1' }] }] });
  await t.commit();
  out.committed.push(...m.map(x => x.value));
  await producer.disconnect();
  const consumer = kafka.consumer({ groupId: groupId + '-reader', readUncommitted: false });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await new Promise((resolve, reject) => {
    const stop = setTimeout(resolve, 8000);
    consumer.run({ eachMessage: async ({ message }) => {
      out.read.push(message.value.toString());
      if (out.read.length >= out.committed.length) { clearTimeout(stop); setTimeout(resolve, 500); }
    } }).catch(reject);
  });
  await consumer.disconnect();
  clearTimeout(timer);
  console.log(JSON.stringify(out));
  process.exit(0);
})().catch(e => { console.error(e); process.exit(1); });
