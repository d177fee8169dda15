declare module '*.sql' {
  const text: string
  export default text
}
declare module '*.wasm' {
  const path: string
  export default path
}
declare module '*.data' {
  const path: string
  export default path
}
declare module '*.css' {
  const text: string
  export default text
}
// The dashboard's script files, embedded as text (import ... with { type: 'text' }).
declare module '*/assets/campaign.js' {
  const text: string
  export default text
}
declare module '*/assets/inbox.js' {
  const text: string
  export default text
}
declare module '*/assets/copy.js' {
  const text: string
  export default text
}
declare module '*/assets/form-token.js' {
  const text: string
  export default text
}
declare module '*/assets/senders.js' {
  const text: string
  export default text
}
declare module '*.svg' {
  const text: string
  export default text
}
// The API reference's assets, embedded as files (import ... with { type: 'file' }): each is a path.
declare module 'swagger-ui-dist/*' {
  const path: string
  export default path
}
declare module '*/assets/start.js' {
  const path: string
  export default path
}
declare module '*.png' {
  const path: string
  export default path
}
declare module '*/assets/template-editor.js' {
  const text: string
  export default text
}
