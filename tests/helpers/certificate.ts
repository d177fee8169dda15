// A self-signed certificate for localhost (and 127.0.0.1), made with openssl into `dir` for a test's
// TLS listener or front: cert.pem and key.pem, valid one day.

import { join } from 'node:path'

export type Certificate = { certFile: string; keyFile: string }

export function makeCertificate(dir: string): Certificate {
  const openssl = Bun.which('openssl')
  if (!openssl) throw new Error('openssl is needed to make the test certificate and is not on PATH (apt-get install openssl)')
  const certFile = join(dir, 'cert.pem')
  const keyFile = join(dir, 'key.pem')
  // prettier-ignore
  const made = Bun.spawnSync(
    [openssl, 'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=localhost',
      '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1', '-days', '1', '-keyout', keyFile, '-out', certFile],
    { stdout: 'pipe', stderr: 'pipe', timeout: 30_000 },
  )
  if (made.exitCode !== 0) throw new Error(`openssl failed: ${made.stderr.toString()}`)
  return { certFile, keyFile }
}
