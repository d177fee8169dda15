// An open conversation keeps itself current: every few seconds (while the tab is visible) it asks for
// the latest page of the thread (GET .../inbox/:phone/thread) and puts it in place of the list, unless
// the keyboard is inside the list (focus is never moved from under a reader). The live region says how
// many messages arrived; statuses change silently. Without this script the page has a link that loads
// it again.
;(function () {
  var live = document.getElementById('thread-live')
  var news = document.getElementById('thread-news')
  if (!live || !news) return
  var url = live.getAttribute('data-thread-url')
  var every = Number(live.getAttribute('data-poll-ms')) || 5000
  function count(el) {
    return el ? el.querySelectorAll('li.bubble').length : 0
  }
  function poll() {
    if (document.hidden) return setTimeout(poll, every)
    fetch(url, { credentials: 'same-origin', headers: { accept: 'text/html' } })
      .then(function (r) {
        if (!r.ok) throw new Error('HTTP ' + r.status)
        return r.text()
      })
      .then(function (html) {
        var thread = document.getElementById('thread')
        if (thread && !thread.contains(document.activeElement)) {
          var next = new DOMParser().parseFromString(html, 'text/html').getElementById('thread')
          if (next && next.innerHTML !== thread.innerHTML) {
            var ids = {}
            thread.querySelectorAll('li.bubble').forEach(function (li) {
              ids[li.id] = true
            })
            var added = 0
            next.querySelectorAll('li.bubble').forEach(function (li) {
              if (!ids[li.id]) added++
            })
            thread.replaceWith(document.importNode(next, true))
            if (added > 0) news.textContent = added === 1 ? '1 new message.' : added + ' new messages.'
          }
        }
        setTimeout(poll, every)
      })
      .catch(function () {
        setTimeout(poll, every * 3)
      })
  }
  setTimeout(poll, every)
})()
