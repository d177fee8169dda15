import { expect, test } from 'bun:test'
import { Batcher } from '../../src/lib/batch'

test('items that arrive while a write runs go together into the next one', async () => {
  const writes: number[][] = []
  // The first write runs until the test lets it end: the next items surely arrive while it runs.
  let running!: () => void
  const firstRunning = new Promise<void>((resolve) => (running = resolve))
  let end!: () => void
  const firstEnds = new Promise<void>((resolve) => (end = resolve))
  const batcher = new Batcher<number, number>(async (items) => {
    writes.push(items)
    if (writes.length === 1) {
      running()
      await firstEnds
    }
    return items.map((i) => i * 10)
  })
  const first = batcher.add(1)
  await firstRunning
  const rest = Promise.all([2, 3, 4].map((i) => batcher.add(i)))
  end()
  expect(await first).toBe(10)
  expect(await rest).toEqual([20, 30, 40])
  expect(writes).toEqual([[1], [2, 3, 4]])
})

test('a failed write of several items is retried one by one: only the bad item fails', async () => {
  const writes: number[][] = []
  const batcher = new Batcher<number, string>(async (items) => {
    writes.push(items)
    if (items.includes(13)) throw new Error('rejected by the database')
    return items.map(String)
  })
  const results = await Promise.allSettled([12, 13, 14].map((i) => batcher.add(i)))
  expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled'])
  expect(writes).toEqual([[12, 13, 14], [12], [13], [14]])
})

test('a write that found no connection fails all its items at once: alone, each would wait for one again', async () => {
  for (const code of ['CONNECT_TIMEOUT', 'ECONNREFUSED']) {
    const writes: number[][] = []
    const batcher = new Batcher<number, string>(async (items) => {
      writes.push(items)
      throw Object.assign(new Error('no connection'), { code })
    })
    const results = await Promise.allSettled([1, 2, 3].map((i) => batcher.add(i)))
    expect(results.map((r) => r.status === 'rejected' && (r.reason as { code?: string }).code)).toEqual([code, code, code])
    expect(writes).toEqual([[1, 2, 3]])
  }
  // A connection that broke midway is no such case: the items are tried alone, on fresh connections.
  const writes: number[][] = []
  const batcher = new Batcher<number, string>(async (items) => {
    writes.push(items)
    if (writes.length === 1) throw Object.assign(new Error('cut'), { code: 'CONNECTION_CLOSED' })
    return items.map(String)
  })
  expect(await Promise.all([1, 2].map((i) => batcher.add(i)))).toEqual(['1', '2'])
  expect(writes).toEqual([[1, 2], [1], [2]])
})
