// The clients' source of truth: the integrator's OpenAPI document, exactly as the service serves it at
// /docs/json, made offline (the app composed from its routes over an empty embedded database that no
// request reaches), and the TypeScript client's types generated from it by openapi-typescript.
//   bun clients/openapi.ts                   regenerate clients/typescript/src/schema.d.ts
//   bun clients/openapi.ts --json FILE       write the document to FILE
// tests/clients/openapi-drift.test.ts fails when schema.d.ts or a client's operations fall behind it.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import openapiTS, { astToString, COMMENT_HEADER } from 'openapi-typescript'
import { readConfig } from '../src/config'
import { createApp } from '../src/app'
import { buildDeps } from '../src/server'
import { openDatabase } from '../src/db/client'

export const SCHEMA_FILE = join(import.meta.dir, 'typescript', 'src', 'schema.d.ts')

/** The integrator's document (its `servers` names `publicBaseUrl`). */
export async function integratorDocument(publicBaseUrl = 'http://127.0.0.1:3000'): Promise<Record<string, any>> {
  const dataDir = mkdtempSync(join(tmpdir(), 'openapi-'))
  const database = await openDatabase({ dataDir })
  try {
    const config = readConfig({ DATA_DIR: dataDir, ADMIN_TOKEN: 'openapi-document-only-0123456789', PUBLIC_BASE_URL: publicBaseUrl })
    const { deps } = buildDeps(config, database)
    const response = await createApp(deps).handle(new Request(`${publicBaseUrl}/docs/json`))
    if (response.status !== 200) throw new Error(`/docs/json answered ${response.status}`)
    return (await response.json()) as Record<string, any>
  } finally {
    await database.close()
    rmSync(dataDir, { recursive: true, force: true })
  }
}

/** schema.d.ts as openapi-typescript's command line writes it. */
export async function typescriptTypes(document: Record<string, any>): Promise<string> {
  return COMMENT_HEADER + astToString(await openapiTS(document as Parameters<typeof openapiTS>[0]))
}

if (import.meta.main) {
  const document = await integratorDocument()
  const jsonAt = process.argv.indexOf('--json')
  if (jsonAt >= 0) {
    const file = process.argv[jsonAt + 1]
    if (!file) throw new Error('--json needs a file name')
    writeFileSync(file, `${JSON.stringify(document, null, 2)}\n`)
  } else {
    writeFileSync(SCHEMA_FILE, await typescriptTypes(document))
    console.log(`wrote ${SCHEMA_FILE}`)
  }
}
