// Every provider the service knows, by name. PROVIDER must name one of them; config.ts reads each
// one's settings and --help lists its variables. Adding a provider: its folder (providers/<name>/,
// exporting a defineProvider(...)) and one entry in PROVIDERS.

import type {
  Pace,
  Provider,
  ProviderContext,
  ProviderPlugin,
  ProviderVariable,
  SettingsReader,
  TemplateRules,
  TemplateReview,
  WaTemplateSupport,
  PricingAnalyticsSupport,
} from './provider'
import { simulator } from './simulator'
import { twilio } from './twilio'
import { meta } from './meta'

export const PROVIDERS = [simulator, twilio, meta] as const

type Plugin = (typeof PROVIDERS)[number]
export type ProviderName = Plugin['name']
/** Every provider's settings, by name: `config.providers.twilio.authToken`. */
export type ProviderSettings = { [P in Plugin as P['name']]: ReturnType<P['readSettings']> }

type Intersection<U> = (U extends unknown ? (x: U) => void : never) extends (x: infer I) => void ? I : never
/** Every provider's variables in one table, in registry order. */
export const PROVIDER_VARIABLES = Object.assign({}, ...PROVIDERS.map((p) => p.variables)) as Intersection<Plugin['variables']>

export const PROVIDER_NAMES: readonly ProviderName[] = PROVIDERS.map((p) => p.name)

/** The plugins as one type, for code that handles any of them (each one's settings are its own). */
export const anyProvider = (plugin: Plugin) => plugin as unknown as ProviderPlugin<string, unknown, Record<string, ProviderVariable>>

/** Reads every provider's settings; the selected one's required settings must be there. */
export function readProviderSettings(read: SettingsReader, selected: ProviderName): ProviderSettings {
  return Object.fromEntries(PROVIDERS.map((p) => [p.name, anyProvider(p).readSettings(read, p.name === selected)])) as ProviderSettings
}

/** The sender of the provider `name`, from its own settings. */
export function createProvider<N extends ProviderName>(name: N, settings: ProviderSettings[N], context: ProviderContext): Provider {
  return anyProvider(PROVIDERS.find((p) => p.name === name)!).create(settings, context)
}

/** The pace of the provider `name` with its settings: its own for them (paceFor), else its default. */
export function paceOf<N extends ProviderName>(name: N, settings: ProviderSettings[N]): Pace {
  const plugin = anyProvider(PROVIDERS.find((p) => p.name === name)!)
  return plugin.paceFor?.(settings) ?? plugin.pace
}

/** The providers that send approved templates, by name, with their naming rules. */
export const TEMPLATE_RULES: ReadonlyMap<string, TemplateRules> = new Map(
  PROVIDERS.map(anyProvider).flatMap((p) => (p.templates ? [[p.name, p.templates] as const] : [])),
)

/** How the provider `name` reviews a template submitted to one of its senders (the simulator), or null when it does not. */
export function templateReviewOf(name: string): ((settings: unknown, definition: { name: string }) => TemplateReview) | null {
  const plugin = PROVIDERS.map(anyProvider).find((p) => p.name === name)
  return plugin?.reviewsTemplates ? (settings, definition) => plugin.reviewsTemplates!(settings, definition) : null
}

/** The WhatsApp templates of the provider `name` (listing, submitting), or null when it keeps none of its own. */
export function waTemplatesOf(name: string): WaTemplateSupport<unknown> | null {
  const plugin = PROVIDERS.map(anyProvider).find((p) => p.name === name)
  return plugin?.waTemplates ?? null
}

/** The pricing analytics of the provider `name` (Meta's), or null when it has none. */
export function pricingAnalyticsOf(name: string): PricingAnalyticsSupport<unknown> | null {
  const plugin = PROVIDERS.map(anyProvider).find((p) => p.name === name)
  return plugin?.pricingAnalytics ?? null
}
