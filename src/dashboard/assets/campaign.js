// A campaign's page: polls its progress (JSON) every second and updates the counts and the bar,
// until the campaign is cancelled (delivery and read reports follow
// the last message sent). Without this script the page shows the counts
// as they were when it loaded.
;(function () {
  var root = document.getElementById('campaign-progress')
  if (!root) return
  var url = root.getAttribute('data-progress-url')
  var bar = document.getElementById('progress-bar')
  function show(name, value) {
    var el = document.getElementById('count-' + name)
    if (el) el.textContent = Number(value).toLocaleString('en')
  }
  function poll() {
    fetch(url, { credentials: 'same-origin', headers: { accept: 'application/json' } })
      .then(function (r) {
        if (!r.ok) throw new Error('HTTP ' + r.status)
        return r.json()
      })
      .then(function (p) {
        var s = p.stats
        ;['total', 'sent', 'delivered', 'read', 'failed', 'window_closed', 'opted_out', 'missing_values'].forEach(function (k) {
          show(k, s[k])
        })
        show('pending', p.pending)
        var status = document.getElementById('campaign-status')
        // A new state brings other buttons and dates: load the page again (once per change).
        if (status && status.textContent !== p.status && p.status !== 'sending') return location.reload()
        if (status) status.textContent = p.status
        if (bar) {
          bar.max = Math.max(s.total, 1)
          bar.value = s.total - p.pending
          bar.textContent = bar.value + ' of ' + s.total
        }
        // Delivered and read reports still arrive after the last message went out.
        if (p.status !== 'cancelled') setTimeout(poll, 1000)
      })
      .catch(function () {
        setTimeout(poll, 5000)
      })
  }
  setTimeout(poll, 1000)
})()
