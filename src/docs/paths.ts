// Where each reference page and its OpenAPI document live.
export const DOCS = {
  api: { page: '/docs', json: '/docs/json' },
  admin: { page: '/docs/admin', json: '/docs/admin/json' },
} as const
