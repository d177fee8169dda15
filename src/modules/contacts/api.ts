import type { Deps } from '../../deps'
import { readSql } from '../../http/reads'
import { apiRoutes } from '../../http/groups'
import { ok } from '../../http/errors'
import { envelopeOf, errorsOf } from '../../http/openapi'
import { ChangeContactBody, Contact, ContactIdParams, ContactList, ContactsQuery, CreateContactBody } from './model'
import { changeContactAttributes, createContact, getContact, listContacts } from './service'
import { formatTimes } from '../../lib/time'
import { page } from '../../http/values'

const tags = ['Contacts']

export const contactsApi = (deps: Deps) => {
  const { sql } = deps
  const tz = deps.config.timezone
  return apiRoutes()
    .get(
      '/contacts',
      async ({ query, principal, request }) =>
        ok(formatTimes(await listContacts(await readSql(deps, request), principal, page(query), query.search), tz)),
      {
        query: ContactsQuery,
        response: { 200: envelopeOf(ContactList), ...errorsOf(400, 401, 422) },
        detail: {
          tags,
          summary: "List the account's contacts, newest first",
          description:
            '`data` is `{items, total, limit, offset, has_more}`: `offset` counts records, `total` counts every match. ' +
            'Items are newest first, ties broken by id (higher first). `search` matches name, phone or e-mail (or is a WhatsApp user id), ' +
            'case-insensitive, anywhere in the value.',
        },
      },
    )
    .post(
      '/contacts',
      async ({ body, principal, set }) => {
        set.status = 201
        return ok(formatTimes(await createContact(sql, principal, body), tz))
      },
      {
        body: CreateContactBody,
        response: { 201: envelopeOf(Contact), ...errorsOf(400, 401, 409, 422) },
        detail: {
          tags,
          summary: 'Add a contact',
          description:
            'The phone is normalised to `+62...`; a second contact with the same normalised phone in the account is ' +
            '409 `CONFLICT`. `tags` is a comma-separated string and comes back as an array.',
        },
      },
    )
    .get('/contacts/:id', async ({ params, principal }) => ok(formatTimes(await getContact(sql, principal.accountId, params.id), tz)), {
      params: ContactIdParams,
      response: { 200: envelopeOf(Contact), ...errorsOf(400, 401, 404) },
      detail: {
        tags,
        summary: 'One contact, with its attributes',
        description: "Another account's contact is 404 `NOT_FOUND`, like one that does not exist.",
      },
    })
    .patch(
      '/contacts/:id',
      async ({ params, body, principal }) =>
        ok(formatTimes(await changeContactAttributes(sql, principal.accountId, params.id, body.attributes), tz)),
      {
        params: ContactIdParams,
        body: ChangeContactBody,
        response: { 200: envelopeOf(Contact), ...errorsOf(400, 401, 404, 422) },
        detail: {
          tags,
          summary: "Change a contact's attributes",
          description:
            '`attributes` is merged as a JSON merge patch (RFC 7396): `{"order_id": "INV-1002", "due_date": null}` sets ' +
            '`order_id`, removes `due_date` and keeps every other attribute. The answer is the whole contact. A change ' +
            'that would leave more than 50 attributes is 422 naming the first key over the limit, and changes nothing.',
        },
      },
    )
}
