import { expect, test } from 'bun:test'
import { Batcher } from '../../src/lib/batch'

test('items that arrive while a write runs go together into the next one', async () => {
  const writes: number[][] = []
  const batcher = new Batcher<number, number>(async (items) => {
    writes.push(items)
    await Bun.sleep(20)
    return items.map((i) => i * 10)
  })
  const first = batcher.add(1)
  await Bun.sleep(5) // the first write is running
  const rest = await Promise.all([2, 3, 4].map((i) => batcher.add(i)))
  expect(await first).toBe(10)
  expect(rest).toEqual([20, 30, 40])
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
