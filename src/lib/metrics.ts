// A small metrics registry and the Prometheus text exposition format (version 0.0.4): counters,
// gauges and histograms with fixed buckets, each with a fixed list of label names. Written here
// rather than taken from a package: the format is a page of rules, and the service needs little of
// what client libraries add (default process metrics, push gateways, summaries).
// https://prometheus.io/docs/instrumenting/exposition_formats/

export const CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8'

type Labels<L extends string> = Record<L, string>

/** One metric family as the exposition writes it: its samples are (name suffix, labels, value). */
export type Family = {
  name: string
  help: string
  type: 'counter' | 'gauge' | 'histogram'
  samples: { suffix?: string; labels: Record<string, string>; value: number }[]
}

/** `\` and newlines in HELP texts; `\`, `"` and newlines in label values (the format's only escapes). */
export const escapeHelp = (text: string) => text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')
export const escapeLabelValue = (value: string) => value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')

function formatValue(value: number): string {
  if (Number.isNaN(value)) return 'NaN'
  if (value === Infinity) return '+Inf'
  if (value === -Infinity) return '-Inf'
  return String(value)
}

function formatLabels(labels: Record<string, string>): string {
  const parts = Object.entries(labels).map(([name, value]) => `${name}="${escapeLabelValue(value)}"`)
  return parts.length === 0 ? '' : `{${parts.join(',')}}`
}

/** Families in the text format, each with its HELP and TYPE lines; ends with a newline. */
export function exposition(families: Family[]): string {
  const lines: string[] = []
  for (const family of families) {
    lines.push(`# HELP ${family.name} ${escapeHelp(family.help)}`, `# TYPE ${family.name} ${family.type}`)
    for (const sample of family.samples) {
      lines.push(`${family.name}${sample.suffix ?? ''}${formatLabels(sample.labels)} ${formatValue(sample.value)}`)
    }
  }
  return `${lines.join('\n')}\n`
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/

abstract class Metric<L extends string> {
  protected readonly series = new Map<string, { labels: Labels<L> }>()
  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly L[],
  ) {
    if (!NAME.test(name)) throw new Error(`metric name ${name} is not valid`)
    for (const label of labelNames) if (!LABEL.test(label) || label.startsWith('__')) throw new Error(`label ${label} is not valid`)
  }
  /** The series of these label values (in labelNames' order), made on first use. */
  protected key(labels: Labels<L>): string {
    return this.labelNames.map((name) => labels[name]).join('\u0000')
  }
  abstract family(): Family
}

export class Counter<L extends string = never> extends Metric<L> {
  protected override readonly series = new Map<string, { labels: Labels<L>; value: number }>()
  /** Adds `by` (>= 0: a counter only goes up) to the series of `labels`. */
  inc(labels: Labels<L>, by = 1): void {
    if (!(by >= 0)) return
    const key = this.key(labels)
    const entry = this.series.get(key)
    if (entry) entry.value += by
    else this.series.set(key, { labels: { ...labels }, value: by })
  }
  family(): Family {
    return { name: this.name, help: this.help, type: 'counter', samples: [...this.series.values()].map((s) => ({ ...s })) }
  }
}

export class Gauge<L extends string = never> extends Metric<L> {
  protected override readonly series = new Map<string, { labels: Labels<L>; value: number }>()
  set(labels: Labels<L>, value: number): void {
    const key = this.key(labels)
    const entry = this.series.get(key)
    if (entry) entry.value = value
    else this.series.set(key, { labels: { ...labels }, value })
  }
  add(labels: Labels<L>, by: number): void {
    const key = this.key(labels)
    this.set(labels, (this.series.get(key)?.value ?? 0) + by)
  }
  family(): Family {
    return { name: this.name, help: this.help, type: 'gauge', samples: [...this.series.values()].map((s) => ({ ...s })) }
  }
}

export class Histogram<L extends string = never> extends Metric<L> {
  protected override readonly series = new Map<string, { labels: Labels<L>; counts: number[]; sum: number; count: number }>()
  readonly buckets: readonly number[]
  constructor(name: string, help: string, labelNames: readonly L[], buckets: readonly number[]) {
    super(name, help, labelNames)
    if (labelNames.includes('le' as L)) throw new Error('a histogram cannot have a label named le')
    this.buckets = [...buckets].sort((a, b) => a - b)
  }
  observe(labels: Labels<L>, value: number): void {
    if (!Number.isFinite(value)) return
    const key = this.key(labels)
    let entry = this.series.get(key)
    if (!entry) this.series.set(key, (entry = { labels: { ...labels }, counts: this.buckets.map(() => 0), sum: 0, count: 0 }))
    // Stored per bucket; the exposition makes them cumulative.
    const i = this.buckets.findIndex((upper) => value <= upper)
    if (i !== -1) entry.counts[i]!++
    entry.sum += value
    entry.count++
  }
  family(): Family {
    const samples: Family['samples'] = []
    for (const s of this.series.values()) {
      let cumulative = 0
      this.buckets.forEach((upper, i) => {
        cumulative += s.counts[i]!
        samples.push({ suffix: '_bucket', labels: { ...s.labels, le: formatValue(upper) }, value: cumulative })
      })
      samples.push({ suffix: '_bucket', labels: { ...s.labels, le: '+Inf' }, value: s.count })
      samples.push({ suffix: '_sum', labels: s.labels, value: s.sum })
      samples.push({ suffix: '_count', labels: s.labels, value: s.count })
    }
    return { name: this.name, help: this.help, type: 'histogram', samples }
  }
}

/** The metrics of a process, in the order they were made. */
export class Registry {
  private readonly metrics: Metric<string>[] = []
  private add<M extends Metric<string>>(metric: M): M {
    if (this.metrics.some((m) => m.name === metric.name)) throw new Error(`metric ${metric.name} registered twice`)
    this.metrics.push(metric)
    return metric
  }
  counter<L extends string = never>(name: string, help: string, labelNames: readonly L[] = []): Counter<L> {
    return this.add(new Counter<L>(name, help, labelNames))
  }
  gauge<L extends string = never>(name: string, help: string, labelNames: readonly L[] = []): Gauge<L> {
    return this.add(new Gauge<L>(name, help, labelNames))
  }
  histogram<L extends string = never>(name: string, help: string, labelNames: readonly L[], buckets: readonly number[]): Histogram<L> {
    return this.add(new Histogram<L>(name, help, labelNames, buckets))
  }
  families(): Family[] {
    return this.metrics.map((m) => m.family())
  }
  /** Each metric's name, type, help and label names, for the generated reference (docs/reference/metrics.md). */
  describe(): { name: string; type: Family['type']; help: string; labels: readonly string[] }[] {
    return this.metrics.map((m) => ({ name: m.name, type: m.family().type, help: m.help, labels: m.labelNames }))
  }
}
