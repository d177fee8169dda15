// Templates (text with placeholders filled from contact fields), their bindings to providers' approved
// templates, and segments (contacts selected by tag): what campaigns and template sends are built from.

import { t } from 'elysia'
import { Type } from '@sinclair/typebox'

// Answers' integers: TypeBox's own (Elysia's t.Integer would document them as maybe a string).
const jsonInteger = Type.Integer

export const CreateTemplateBody = t.Object(
  {
    name: t.String({ description: '1 to 200 characters', examples: ['Order shipped'] }),
    body: t.String({
      description: 'Message text with {{name}}-style placeholders filled from contact fields, 1 to 4096 characters',
      examples: ['Hi {{name}}, your order has shipped.'],
    }),
  },
  { additionalProperties: false },
)
export type CreateTemplateBody = typeof CreateTemplateBody.static

// A binding of an account template to a provider's approved template (one per provider per template).
export const Binding = t.Object({
  provider: t.String({ description: 'The provider whose template this is', examples: ['twilio'] }),
  ref: t.String({
    description: "Twilio: the Content SID (HX…); Meta: the approved template's name; simulator: any name",
    examples: ['HX0123456789abcdef0123456789abcdef'],
  }),
  language: t.Union([t.String(), t.Null()], { description: "Meta: the template's language code (en_US, id); null for Twilio" }),
  variables: t.Array(t.String(), {
    description:
      "Placeholder names of the account template, in the provider template's order: Twilio's {{1}}, {{2}}…, Meta's body parameters",
    examples: [['name', 'city']],
  }),
  updated_at: t.String(),
})
export type Binding = typeof Binding.static

export const BindingBody = t.Object(
  {
    ref: t.String({
      description:
        "Twilio: the Content SID (HX + 32 hex characters); Meta: the approved template's name (lowercase letters, digits, underscores); " +
        'simulator: any name without spaces',
      examples: ['HX0123456789abcdef0123456789abcdef'],
    }),
    language: t.Optional(
      t.Union([t.String(), t.Null()], {
        description: 'Meta: required, a language code such as en_US or id; Twilio: none',
        examples: ['id'],
      }),
    ),
    variables: t.Optional(
      t.Array(t.String(), {
        description:
          "The provider template's variables in its order, each a placeholder of the account template (name, phone, email, city) " +
          'that it uses; at most 100, default none',
        examples: [['name', 'city']],
      }),
    ),
  },
  { additionalProperties: false },
)
export type BindingBody = typeof BindingBody.static

export const Template = t.Object({
  id: jsonInteger(),
  name: t.String(),
  body: t.String(),
  created_at: t.String(),
  bindings: t.Array(Binding, { description: "Its bindings to providers' approved templates, by provider name" }),
})
export type Template = typeof Template.static

/** The answer of a delete (a template, a binding). */
export const Deleted = t.Object({ deleted: t.Literal(true) })

export const CreateSegmentBody = t.Object(
  {
    name: t.String({ description: '1 to 200 characters', examples: ['VIP customers'] }),
    tag: t.String({
      description: 'Contacts carrying this tag (compared case-insensitively) form the segment; no commas, at most 100 characters',
      examples: ['vip'],
    }),
  },
  { additionalProperties: false },
)
export type CreateSegmentBody = typeof CreateSegmentBody.static
export const Segment = t.Object({
  id: jsonInteger(),
  name: t.String(),
  tag: t.String(),
  contact_count: jsonInteger({ description: "The account's contacts carrying the tag now (case-insensitive)" }),
  created_at: t.String(),
})
export const UpdateTemplateBody = t.Object({ name: t.Optional(t.String()), body: t.Optional(t.String()) }, { additionalProperties: false })
export type Segment = typeof Segment.static
