// The new sender form: shows the credential fields of the provider chosen in its select only, and
// disables the others, so they are neither sent nor checked. Without this script every provider's
// fields show, and the service reads only those of the provider chosen.
;(function () {
  var select = document.getElementById('sender-provider')
  if (!select) return
  function show() {
    var sets = select.form.querySelectorAll('fieldset[data-provider]')
    for (var i = 0; i < sets.length; i++) {
      var chosen = sets[i].getAttribute('data-provider') === select.value
      sets[i].hidden = !chosen
      sets[i].disabled = !chosen
    }
  }
  select.addEventListener('change', show)
  show()
})()
