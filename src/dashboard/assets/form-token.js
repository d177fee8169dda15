// Single-use form tokens (form-token.ts) belong to the page as it was first shown. After Back,
// Chromium asks for the page again (no-store) and fills its forms with what they held (the typed
// amount) but the server's fresh token, which would book the same top-up again. So the tokens a page
// was first shown with are kept in its history entry, and a page shown again from its entry (Back,
// Forward, reload) gets them back: sent again, it is refused. A page opened afresh has a new entry
// and keeps its fresh tokens.
const inputs = [...document.querySelectorAll('input[type="hidden"][name="_once"]')]
const keyOf = (input, i) => `${i} ${input.form?.getAttribute('action') ?? ''}`
const kept = history.state?.formTokens
if (kept) {
  inputs.forEach((input, i) => {
    const token = kept[keyOf(input, i)]
    if (typeof token === 'string') input.value = token
  })
} else if (inputs.length > 0) {
  history.replaceState({ ...history.state, formTokens: Object.fromEntries(inputs.map((input, i) => [keyOf(input, i), input.value])) }, '')
}
