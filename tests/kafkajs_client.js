// KafkaJS against the replay broker (tests/test_serve_kafkajs.py): consume a topic from the start,
// look an offset up by timestamp, list groups and topic offsets through its admin client; prints JSON.
const { Kafka, logLevel, CompressionTypes, CompressionCodecs } = require('kafkajs');
// pure-JS codecs (KafkaJS's own lz4/zstd codec packages need native modules); gzip is node's zlib
const SnappyCodec = require('kafkajs-snappy');
const lz4 = require('lz4js');
const fzstd = require('fzstd');
CompressionCodecs[CompressionTypes.Snappy] = SnappyCodec;
CompressionCodecs[CompressionTypes.LZ4] = () => ({
  async compress(encoder) { return Buffer.from(lz4.compress(encoder.buffer)); },
  async decompress(buffer) { return Buffer.from(lz4.decompress(buffer)); },
});
CompressionCodecs[CompressionTypes.ZSTD] = () => ({
  async compress() { throw new Error('zstd compression is not needed by this test'); },
  async decompress(buffer) { return Buffer.from(fzstd.decompress(buffer)); },
});
const [broker, topic, groupId] = process.argv.slice(2);
const kafka = new Kafka({ clientId: 'kfx-kafkajs', brokers: [broker], logLevel: logLevel.ERROR,
                          retry: { retries: 2 } });
(async () => {
  const admin = kafka.admin();
  await admin.connect();
  const offsets = await admin.fetchTopicOffsets(topic);
  const consumer = kafka.consumer({ groupId, readUncommitted: false });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const seen = [];
  const high = Number(offsets[0].high);
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => resolve(), 20000);
    consumer.run({ autoCommit: true, eachMessage: async ({ message }) => {
      seen.push(Number(message.offset));
      if (Number(message.offset) >= high - 1 - 2) { clearTimeout(timer); resolve(); }
    } }).catch(reject);
  });
  await consumer.commitOffsets([{ topic, partition: 0, offset: String(high) }]).catch(() => {});
  await consumer.disconnect();
  const groups = await admin.listGroups();
  const byTime = await admin.fetchTopicOffsetsByTimestamp(topic, 1700000104889);
  await admin.disconnect();
  console.log(JSON.stringify({ offsets, count: seen.length, first: seen[0], last: seen[seen.length - 1],
                               groups: groups.groups.map(g => g.groupId), byTime }));
})().catch(e => { console.error(e); process.exit(1); });
