// The page frame: one <h1> per page, the navigation of the signed-in role, and the sign-out form.

import { h, Fragment, type Child, type Html } from './jsx'
import type { Flash, Session } from './session'

export const STYLESHEET = '/dashboard/assets/style.css'
export const COPY_SCRIPT = '/dashboard/assets/copy.js'
/** Keeps a form's single-use token with what Back restores of the form (assets/form-token.js). */
const FORM_TOKEN_SCRIPT = '/dashboard/assets/form-token.js'
export const FAVICON = '/dashboard/assets/favicon.svg'

// The navigation of each role. An operator opens an account's own pages from its account page.
const MEMBER_PAGES = [
  ['/dashboard', 'Overview'],
  ['/dashboard/keys', 'API keys'],
  ['/dashboard/messages', 'Messages'],
  ['/dashboard/inbox', 'Inbox'],
  ['/dashboard/ledger', 'Ledger'],
  ['/dashboard/usage', 'Usage'],
  ['/dashboard/contacts', 'Contacts'],
  ['/dashboard/opt-outs', 'Opt-outs'],
  ['/dashboard/templates', 'Templates and segments'],
  ['/dashboard/campaigns', 'Campaigns'],
  ['/dashboard/webhook', 'Webhook'],
] as const
const OPERATOR_PAGES = [
  ['/dashboard/accounts', 'Accounts'],
  ['/dashboard/price', 'Price'],
  ['/dashboard/reconciliation', 'Reconciliation'],
  ['/dashboard/senders', 'Senders'],
  ['/dashboard/users', 'Users'],
  ['/dashboard/deliveries', 'Failed deliveries'],
  ['/dashboard/audit', 'Audit log'],
] as const

export function Layout(props: { title: string; session?: Session | null; notice?: string; error?: string; children?: Child }): Html {
  const { session } = props
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>{props.title} · Messaging dashboard</title>
        <link rel="icon" type="image/svg+xml" href={FAVICON} />
        <link rel="stylesheet" href={STYLESHEET} />
        <script src={COPY_SCRIPT} defer></script>
        <script src={FORM_TOKEN_SCRIPT} defer></script>
      </head>
      <body>
        <a class="skip-link" href="#content">
          Skip to content
        </a>
        <header>
          <span class="brand">
            <img src={FAVICON} alt="" width="24" height="24" />
            Messaging dashboard
          </span>
          {session ? (
            <>
              <nav aria-label="Main">
                {(session.user.role === 'operator' ? OPERATOR_PAGES : MEMBER_PAGES).map(([href, label]) => (
                  <a href={href}>{label}</a>
                ))}
              </nav>
              <span class="muted">{session.user.email}</span>
              <form method="post" action="/dashboard/sign-out">
                <input type="hidden" name="_csrf" value={session.csrf} />
                <button class="secondary" type="submit">
                  Sign out
                </button>
              </form>
            </>
          ) : null}
        </header>
        <main id="content">
          <h1>{props.title}</h1>
          {props.notice ? (
            <p class="notice" role="status">
              {props.notice}
            </p>
          ) : null}
          {props.error ? (
            <p class="notice error" role="alert">
              {props.error}
            </p>
          ) : null}
          {session?.flashes.map(Flashed)}
          {props.children}
        </main>
      </body>
    </html>
  )
}

/** What the change before this page left to show once (flash.ts): a notice, an error, a secret with its copy button. */
function Flashed(flash: Flash): Html {
  return (
    <>
      {flash.notice ? (
        <p class="notice" role="status">
          {flash.notice}
        </p>
      ) : null}
      {flash.error ? (
        <p class="notice error" role="alert">
          {flash.error}
          {flash.link ? (
            <>
              {' '}
              <a href={flash.link.href}>{flash.link.text}</a>
            </>
          ) : null}
        </p>
      ) : null}
      {flash.shown ? (
        <div class="card shown-once" role="status">
          <p>{flash.shown.text}</p>
          <code class="secret" id={flash.shown.id}>
            {flash.shown.value}
          </code>
          <CopyButton target={flash.shown.id} what={flash.shown.what} />
        </div>
      ) : null}
    </>
  )
}

/** A hidden field with the session's CSRF token: in every form that changes something. */
export const Csrf = (props: { session: Session }) => <input type="hidden" name="_csrf" value={props.session.csrf} />

/** A button that copies the text of the element with id `target` (assets/copy.js; without script it does nothing). */
export const CopyButton = (props: { target: string; what: string }) => (
  <button class="secondary" type="button" data-copy={props.target}>
    Copy {props.what}
  </button>
)
