// The API reference pages: /docs (the integrator's API, document at /docs/json) and /docs/admin
// (operators: the admin API and provider callbacks, document at /docs/admin/json). Swagger UI is a
// pinned dependency served from /docs/assets and embedded in the single binary (imports with
// `type: 'file'`), so the pages work without any network. The page names its document by an absolute
// path, so /docs and /docs/ both work.

import { Elysia } from 'elysia'
import swaggerBundle from 'swagger-ui-dist/swagger-ui-bundle.js' with { type: 'file' }
import swaggerCss from 'swagger-ui-dist/swagger-ui.css' with { type: 'file' }
import favicon from 'swagger-ui-dist/favicon-32x32.png' with { type: 'file' }
import startScript from './assets/start.js' with { type: 'file' }
import pageCss from './assets/docs.css' with { type: 'file' }
import { ApiError } from '../http/errors'
import { DOCS } from './paths'
import { kind, type RouteTable } from '../http/routes'
import { openApiDocuments, type Audience, type DocumentsOptions, type OpenApiDocument } from './openapi'

const ASSETS: Record<string, string> = {
  'swagger-ui-bundle.js': swaggerBundle,
  'swagger-ui.css': swaggerCss,
  'favicon.png': favicon,
  'start.js': startScript,
  'docs.css': pageCss,
}

// Scripts and styles from this origin only (Swagger UI styles through the DOM, which CSP allows);
// the document is fetched from this origin; nothing else is loaded.
const PAGE_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self' data:; form-action 'none'; frame-ancestors 'none'; base-uri 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)

function page(audience: Audience, title: string): string {
  const other =
    audience === 'api' ? { href: DOCS.admin.page, label: 'Admin API (operators)' } : { href: DOCS.api.page, label: 'Integrator API' }
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<link rel="icon" type="image/png" href="/docs/assets/favicon.png">
<link rel="stylesheet" href="/docs/assets/swagger-ui.css">
<link rel="stylesheet" href="/docs/assets/docs.css">
</head>
<body>
<nav class="docs-nav"><strong>${escapeHtml(title)}</strong><a href="${DOCS[audience].json}">OpenAPI document</a><a href="${other.href}">${other.label}</a></nav>
<div id="swagger-ui" data-document="${DOCS[audience].json}"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/assets/start.js"></script>
</body>
</html>
`
}

/** `baseUrl`: where the service is reached (PUBLIC_BASE_URL), the documents' server. */
export function docsRoutes(options: { routes: RouteTable; documents: DocumentsOptions; baseUrl: string }) {
  // The routes are fixed once the app is composed: the documents are made once, on first request.
  let documents: Record<Audience, OpenApiDocument> | undefined
  const documentOf = (audience: Audience) =>
    (documents ??= openApiDocuments(options.routes.all(), options.documents, options.baseUrl))[audience]
  const app = new Elysia({ name: 'docs', detail: kind('docs') })
  for (const audience of ['api', 'admin'] as const) {
    const title = options.documents[audience].info.title as string
    const html = page(audience, title)
    app
      .get(DOCS[audience].page, () => new Response(html, { headers: PAGE_HEADERS }))
      .get(DOCS[audience].json, () => Response.json(documentOf(audience)))
  }
  return app.get('/docs/assets/:name', ({ params }) => {
    const file = Object.hasOwn(ASSETS, params.name) ? ASSETS[params.name] : undefined
    if (!file) throw new ApiError('NOT_FOUND', `no asset ${params.name.slice(0, 100)}`)
    // The assets are pinned with the service: they change only with a new release.
    return new Response(Bun.file(file), { headers: { 'cache-control': 'public, max-age=86400', 'x-content-type-options': 'nosniff' } })
  })
}
