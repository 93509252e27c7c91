// @platformatic/kafka against the replay broker (tests/test_serve_platformatic.py): a consumer group reads
// the given topics from the earliest offset until it has seen the wanted number of records; prints JSON.
import { Consumer } from '@platformatic/kafka'
const [broker, topicsArg, groupId, want] = process.argv.slice(2)
const topics = topicsArg.split(',')
const consumer = new Consumer({ groupId, clientId: 'kfx-platformatic', bootstrapBrokers: [broker] })
const stream = await consumer.consume({ autocommit: false, topics, mode: 'earliest', sessionTimeout: 10000, heartbeatInterval: 500 })
const seen = {}
let n = 0
const timer = setTimeout(async () => { await done() }, 20000)
async function done () {
  clearTimeout(timer)
  console.log(JSON.stringify({ n, seen }))
  await stream.close()
  await consumer.close(true)
  process.exit(0)
}
stream.on('data', async m => { n++; seen[m.topic] = (seen[m.topic] || 0) + 1; if (n >= Number(want)) await done() })
stream.on('error', e => { console.error(e); process.exit(1) })
