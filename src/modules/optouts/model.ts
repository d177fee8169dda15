// The models of opt-outs: the list's query, an opt-out, the bodies of adding one and of a CSV import.

import { t } from 'elysia'
import { Id, pageFields } from '../../http/models'

const SOURCES = ['inbound', 'provider', 'api', 'dashboard', 'admin', 'import']

export const OptOutListQuery = t.Object({
  ...pageFields,
  phone: t.Optional(
    t.String({
      description:
        'Only this phone: 08xx, 62xx, +62xx, any number in + and digits, or a WhatsApp business-scoped user id (`ID.13491208655302741918`; one linked to a phone on one of the numbers of the account means that phone)',
      examples: ['081234567890'],
    }),
  ),
})
export type OptOutListQuery = typeof OptOutListQuery.static

export const OptOut = t.Object({
  phone: t.String({ description: 'The opted-out number, or the user id of a customer known only by one', examples: ['+6281234567890'] }),
  opted_out_at: t.String({ description: 'When, `YYYY-MM-DD HH:MM:SS`', examples: ['2026-11-25 10:15:00'] }),
  source: t.String({
    description:
      "How: `inbound` (the customer wrote a STOP word), `provider` (the provider's own signal: Twilio's `OptOutType`, Meta's " +
      '`user_preferences`), `api` (an API key), `dashboard`, `admin` (the admin API or command line), `import` (a CSV import)',
    enum: SOURCES,
    examples: ['inbound'],
  }),
  detail: t.Union([t.String(), t.Null()], {
    description: "The word written (`STOP`), the provider's signal (`OptOutType=STOP`), or where an import came from",
    examples: ['STOP'],
  }),
  inbound_message_id: t.Union([t.Integer(), t.Null()], { description: 'The inbound message that did it (`GET /inbound/{id}`), if any' }),
  by: t.String({
    description: "Who: `customer`, `provider`, `API key N`, a dashboard user's e-mail, or `admin token`",
    examples: ['customer'],
  }),
})

export const OptOutBody = t.Object({
  phone: t.String({
    description:
      'The number to opt out: 08xx, 62xx, +62xx, + and digits, or a WhatsApp business-scoped user id (`ID.13491208655302741918`; one linked to a phone on one of the numbers of the account means that phone)',
    examples: ['081234567890'],
  }),
})
export type OptOutBody = typeof OptOutBody.static

export const OptOutAdded = t.Object({
  ...OptOut.properties,
  created: t.Boolean({ description: 'false: the phone was opted out already (nothing changed)' }),
})

export const OptOutPhoneParams = t.Object({
  phone: t.String({
    description:
      'The opted-out number: 08xx, 62xx, +62xx, + and digits, or a WhatsApp business-scoped user id (`ID.13491208655302741918`; one linked to a phone on one of the numbers of the account means that phone)',
    examples: ['+6281234567890'],
  }),
})
export const AccountOptOutParams = t.Object({ id: Id('id', 'Account id'), phone: OptOutPhoneParams.properties.phone })

export const OptOutRemoved = t.Object({ phone: t.String(), opted_out: t.Literal(false) })

export const ImportBody = t.Object({
  csv: t.String({
    description:
      'The CSV text: a header row naming a `phone` column (other columns are ignored, so an export imports again), or no header ' +
      'and the phone in the first column; at most 10,000 rows',
    examples: ['phone\n081234567890\n+6281298765432'],
  }),
})

export const ImportReport = t.Object({
  accepted: t.Integer({ description: 'Phones opted out now' }),
  duplicates: t.Integer({ description: 'Phones opted out already, or repeated in the file (nothing changed)' }),
  invalid: t.Array(t.Object({ line: t.Integer(), error: t.String() }), { description: 'Lines that are not a phone, each with its reason' }),
})

export const ExportAnswer = t.Object({
  csv: t.String({ description: 'Every opt-out: `phone,opted_out_at,source,detail,by`, newest first, CRLF line ends' }),
  count: t.Integer(),
})
