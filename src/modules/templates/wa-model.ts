// The models of WhatsApp templates as the integrator's API shows them (issue 30): a template with its
// sender and the parameters a send must fill (parameters.ts), and the list's query.

import { t } from 'elysia'
import { JsonId, pageFields } from '../../http/models'
import { TEMPLATE_CATEGORIES, TEMPLATE_QUALITIES, TEMPLATE_STATUSES } from './catalog'

export const WaTemplateListQuery = t.Object({
  ...pageFields,
  status: t.Optional(
    t.String({ description: `Only this status: ${TEMPLATE_STATUSES.join(', ')} (only \`approved\` sends)`, examples: ['approved'] }),
  ),
  name: t.Optional(t.String({ description: "Only this name (WhatsApp's, exact)", examples: ['order_update'] })),
  language: t.Optional(t.String({ description: 'Only this language code (exact)', examples: ['en_US'] })),
})
export type WaTemplateListQuery = typeof WaTemplateListQuery.static

const example = t.Optional(t.String({ description: "Meta's example value, from the template's definition" }))

export const TemplateParameters = t.Object(
  {
    body: t.Array(
      t.Object({
        key: t.String({
          description: 'What `variables` names: `"1"`, `"2"`... for a positional template, the name for a named one',
          examples: ['1', 'order_id'],
        }),
        example,
      }),
      { description: "The body's parameters in order of appearance (each once): every one must be given in `variables`" },
    ),
    header: t.Union(
      [
        t.Object({ type: t.Literal('text'), key: t.String({ description: "The header's parameter (`header` gives its value)" }), example }),
        t.Object({
          type: t.Union([t.Literal('image'), t.Literal('video'), t.Literal('document')]),
          example: t.Optional(t.String({ description: "Meta's example media handle" })),
          link_prefix: t.Optional(
            t.String({
              description:
                "A Twilio template's media URL up to its variable: `header.link` must start with it, and Twilio fills the variable with the rest",
              examples: ['https://cdn.example.com/invoices/'],
            }),
          ),
          link_suffix: t.Optional(
            t.String({ description: "What `header.link` must end with, when a Twilio template's media URL goes on after its variable" }),
          ),
        }),
        t.Null(),
      ],
      { description: 'null: no header, or a text header without a parameter; else what `header` must give (its text, or the media)' },
    ),
    buttons: t.Array(
      t.Object({
        index: t.Integer({ description: "The button's position among the template's buttons (0-based): `buttons[].index` of a send" }),
        sub_type: t.Union([t.Literal('url'), t.Literal('copy_code')], {
          description:
            "`url`: a URL button's `{{1}}` suffix (or an authentication template's code); `copy_code`: the code a COPY_CODE button copies",
        }),
        otp_type: t.Optional(
          t.Union([t.Literal('copy_code'), t.Literal('one_tap'), t.Literal('zero_tap')], {
            description: "An authentication template's one-time-password button: its value is the code (the body's `{{1}}` too)",
          }),
        ),
        example,
      }),
      { description: 'The buttons that take a value: each must be given in `buttons` (`{index, value}`)' },
    ),
  },
  { description: 'What a send of this template must fill (and nothing else)' },
)

export const WaTemplateView = t.Object({
  id: JsonId({ description: 'The `template_id` of a send, a bulk entry or a campaign' }),
  name: t.String({ description: "WhatsApp's name: lowercase letters, digits and underscores", examples: ['order_update'] }),
  language: t.String({ description: 'Its language code', examples: ['en_US'] }),
  category: t.String({ enum: [...TEMPLATE_CATEGORIES], description: 'marketing, utility or authentication (priced by it)' }),
  status: t.String({
    enum: [...TEMPLATE_STATUSES],
    description: 'Only `approved` sends; `pending` awaits review; the others (`rejected`, `paused`, `disabled`...) do not send',
  }),
  reason: t.Union([t.String(), t.Null()], { description: "Meta's reason for a rejection or a pause, as given; null when none" }),
  quality: t.String({
    enum: [...TEMPLATE_QUALITIES],
    description: "Meta's quality rating: green, yellow, red, or unknown (not yet rated)",
  }),
  parameter_format: t.Union([t.Literal('positional'), t.Literal('named')], {
    description: 'positional: `{{1}}`, `{{2}}`...; named: `{{order_id}}`',
  }),
  sender: t.Union(
    [
      t.Object({
        id: JsonId({ description: 'The sender (as `from` names it; `GET /senders`)' }),
        number: t.String({ examples: ['+6281234567890'] }),
      }),
      t.Null(),
    ],
    { description: "The sender it belongs to (and sends from); null: the deployment's default sender" },
  ),
  parameters: TemplateParameters,
  components: t.Array(t.Record(t.String(), t.Unknown()), {
    description: "WhatsApp's components (HEADER, BODY, FOOTER, BUTTONS) as the Cloud API defines them: the text the customer sees",
  }),
  updated_at: t.String({ description: 'Its last change, `YYYY-MM-DD HH:MM:SS`', examples: ['2026-12-01 10:15:00'] }),
})
export type WaTemplateView = typeof WaTemplateView.static
