// Copy buttons: <button data-copy="ELEMENT_ID"> copies that element's text to the clipboard.
document.addEventListener('click', async (event) => {
  const button = event.target.closest('button[data-copy]')
  if (!button) return
  const source = document.getElementById(button.dataset.copy)
  if (!source) return
  try {
    await navigator.clipboard.writeText(source.textContent.trim())
    button.textContent = 'Copied'
  } catch {
    button.textContent = 'Select the text and copy it'
  }
})
