import { t } from 'elysia'
import { Type } from '@sinclair/typebox'
import { Id, listOf, pageFields } from '../../http/models'

const ATTRIBUTES_RULES =
  'Keys are letters, digits and underscores, at most 64 characters (case counts: `order_id` and `Order_ID` are two keys); ' +
  'values are text of at most 1,024 characters; at most 50 attributes a contact. A bad key or value is 422 naming it ' +
  '(`attributes.order_id: must be at most 1024 characters`).'

export const ContactsQuery = t.Object({
  ...pageFields,
  search: t.Optional(
    t.String({
      description:
        'Case-insensitive substring of the name, phone or e-mail, at most 200 characters. A number written ' +
        'in the 08xx form also matches its +62 form. A WhatsApp business-scoped user id (`ID.13491208655302741918`) finds ' +
        'the contact known by it.',
      examples: ['budi'],
    }),
  ),
})
export type ContactsQuery = typeof ContactsQuery.static

export const CreateContactBody = t.Object(
  {
    name: t.String({ description: 'Contact name, 1 to 200 characters', examples: ['Budi Santoso'] }),
    phone: t.String({ description: 'Indonesian mobile number in one of the forms 08xx, 62xx, +62xx', examples: ['0812-3456-7890'] }),
    email: t.Optional(t.String({ description: 'E-mail address; an empty string means none', examples: ['budi@example.com'] })),
    city: t.Optional(t.String({ description: 'City, at most 200 characters; an empty string means none', examples: ['Bandung'] })),
    tags: t.Optional(
      t.String({
        description:
          'Tags separated by commas: each is trimmed, empty ones are dropped and repeats removed (at most 50 tags of 100 characters)',
        examples: ['vip, reseller'],
      }),
    ),
    attributes: t.Optional(
      t.Record(t.String(), t.String(), {
        description: `The contact's own values, e.g. for a WhatsApp template's parameters. ${ATTRIBUTES_RULES} An empty value means none.`,
        examples: [{ order_id: 'INV-1001', due_date: '5 December' }],
      }),
    ),
  },
  { additionalProperties: false },
)
export type CreateContactBody = typeof CreateContactBody.static

export const ContactIdParams = t.Object({ id: Id('contact', 'Contact id') })

export const ChangeContactBody = t.Object(
  {
    attributes: t.Record(t.String(), t.Union([t.String(), t.Null()]), {
      description:
        "Merged into the contact's attributes as a JSON merge patch: each key given is set to its value, or removed when " +
        `the value is null or ""; keys not given stay as they are. ${ATTRIBUTES_RULES}`,
      examples: [{ order_id: 'INV-1002', due_date: null }],
    }),
  },
  { additionalProperties: false },
)
export type ChangeContactBody = typeof ChangeContactBody.static

// Answers use TypeBox's own Integer: Elysia's t.Integer also admits numeric strings, which would show in the OpenAPI document.
export const Contact = t.Object(
  {
    id: Type.Integer(),
    name: t.String(),
    phone: t.String({
      description:
        'Normalised, +62 international form (any country in + and digits for a contact made by an inbound message); a customer ' +
        'known only by a WhatsApp business-scoped user id has the user id here until Meta names the phone',
    }),
    email: t.Union([t.String(), t.Null()]),
    city: t.Union([t.String(), t.Null()]),
    tags: t.Array(t.String()),
    attributes: t.Record(t.String(), t.String(), { description: "The contact's own values: key to text, `{}` when none" }),
    user_id: t.Union([t.String(), t.Null()], {
      description:
        "Extension (issue 32): the customer's WhatsApp business-scoped user id (`ID.` and up to 128 letters and digits) when Meta " +
        'named one in an inbound message; null otherwise',
    }),
    created_at: t.String({ description: 'YYYY-MM-DD HH:MM:SS in the service time zone' }),
  },
  {
    examples: [
      {
        id: 42,
        name: 'Budi Santoso',
        phone: '+6281234567890',
        email: 'budi@example.com',
        city: 'Bandung',
        tags: ['vip', 'reseller'],
        attributes: { order_id: 'INV-1001' },
        user_id: null,
        created_at: '2025-01-31 09:15:00',
      },
    ],
  },
)
export type Contact = typeof Contact.static

export const ContactList = listOf(Contact)
