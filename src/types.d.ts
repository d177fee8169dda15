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
declare module '*/assets/copy.js' {
  const text: string
  export default text
}
