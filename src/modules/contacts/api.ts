import type { Deps } from '../../deps'
import { readSql } from '../../http/reads'
import { apiRoutes } from '../../http/groups'
import { ok } from '../../http/errors'
import { envelopeOf, errorsOf } from '../../http/openapi'
import { Contact, ContactList, ContactsQuery, CreateContactBody } from './model'
import { createContact, listContacts } from './service'
import { page } from '../../http/values'

const tags = ['Contacts']

export const contactsApi = (deps: Deps) => {
  const { sql } = deps
  const tz = deps.config.timezone
  return apiRoutes()
    .get(
      '/contacts',
      async ({ query, principal, request }) =>
        ok(await listContacts(await readSql(deps, request), tz, principal, page(query), query.search)),
      {
        query: ContactsQuery,
        response: { 200: envelopeOf(ContactList), ...errorsOf(400, 401, 422) },
        detail: {
          tags,
          summary: "List the account's contacts, newest first",
          description:
            '`data` is `{items, total, limit, offset, has_more}`: `offset` counts records, `total` counts every match. ' +
            'Items are newest first, ties broken by id (higher first). `search` matches name, phone or e-mail, ' +
            'case-insensitive, anywhere in the value.',
        },
      },
    )
    .post(
      '/contacts',
      async ({ body, principal, set }) => {
        set.status = 201
        return ok(await createContact(sql, tz, principal, body))
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
}
