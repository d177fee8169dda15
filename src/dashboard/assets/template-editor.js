// The template editor's live preview (modules/templates/wa-pages.tsx): as the operator types, the
// WhatsApp-like bubble beside the form shows the header, the body with its parameters marked, the
// footer and the buttons; each button row shows only the fields of its kind. Without this script the
// form works the same, and its "Preview" button asks the server for the preview.
;(function () {
  var form = document.getElementById('template-editor')
  var holder = document.getElementById('template-preview')
  if (!form || !holder) return
  var KIND_FIELDS = {
    QUICK_REPLY: ['text'],
    URL: ['text', 'url', 'example'],
    PHONE_NUMBER: ['text', 'phone'],
    COPY_CODE: ['code'],
    OTP: ['text', 'otp'],
  }
  function value(name) {
    var el = form.elements.namedItem(name)
    return el && 'value' in el ? String(el.value) : ''
  }
  function el(tag, className, children) {
    var node = document.createElement(tag)
    if (className) node.className = className
    ;(children || []).forEach(function (c) {
      node.appendChild(typeof c === 'string' ? document.createTextNode(c) : c)
    })
    return node
  }
  // A text with its {{n}} / {{name}} parameters marked, as the server's preview marks them.
  function marked(text) {
    return text.split(/(\{\{\s*[A-Za-z0-9_]+\s*\}\})/g).map(function (part, i) {
      return i % 2 === 1 ? el('mark', 'wa-param', [part]) : document.createTextNode(part)
    })
  }
  function rows() {
    return Number(value('buttons')) || 0
  }
  function render() {
    var bubble = el('div', 'wa-bubble')
    var format = value('header_format')
    if (format === 'TEXT' && value('header_text').trim()) bubble.appendChild(el('p', 'wa-header', marked(value('header_text'))))
    else if (format && format !== 'TEXT') bubble.appendChild(el('p', 'wa-media', [format.toLowerCase()]))
    if (value('body_text').trim()) bubble.appendChild(el('p', 'wa-body', marked(value('body_text'))))
    if (value('footer_text').trim()) bubble.appendChild(el('p', 'wa-footer', [value('footer_text')]))
    var name = value('name').trim() || 'the new template'
    var figure = el('figure', 'wa-phone', [bubble])
    figure.setAttribute('aria-label', 'Preview of ' + name)
    var buttons = el('ul', 'wa-buttons')
    for (var i = 0; i < rows(); i++) {
      var kind = value('button_type_' + i)
      var label = value('button_text_' + i) || kind.toLowerCase().replace(/_/g, ' ')
      var item = el('li', '', [label])
      if (kind === 'URL' && value('button_url_' + i))
        item.appendChild(el('span', 'muted small', [' '].concat(marked(value('button_url_' + i)))))
      buttons.appendChild(item)
    }
    if (buttons.childNodes.length > 0) figure.appendChild(buttons)
    figure.appendChild(el('figcaption', 'small', ['Parameters are marked: a send fills them.']))
    holder.replaceChildren(figure)
  }
  // Each button row: only the fields its kind takes.
  function showFields() {
    for (var i = 0; i < rows(); i++) {
      var wanted = KIND_FIELDS[value('button_type_' + i)] || []
      ;['text', 'url', 'example', 'phone', 'code', 'otp'].forEach(function (part) {
        var field = form.querySelector('[data-field="button_' + part + '_' + i + '"]')
        if (field) field.hidden = wanted.indexOf(part) === -1
      })
    }
  }
  form.addEventListener('input', render)
  form.addEventListener('change', function () {
    showFields()
    render()
  })
  showFields()
  render()
})()
