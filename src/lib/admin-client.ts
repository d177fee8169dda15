// The header the command line sends with each admin request, so the audit log can tell it from other
// clients (http/admin-auth.ts reads it). Its own file: the command line loads nothing of the service.

export const ADMIN_CLIENT_HEADER = 'x-admin-client'
