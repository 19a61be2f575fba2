// Progressive enhancement of the request form: node types follow the chosen facility, and the
// "existing allocation" field shows only for renewals, top-ups and trial conversions.
(function () {
  var facility = document.getElementById('id_facility');
  var node = document.getElementById('id_node_type');
  var purpose = document.getElementById('id_purpose');
  var extendsField = document.getElementById('id_extends');
  if (facility && node) {
    var all = Array.prototype.slice.call(node.options).map(function (o) {
      return {value: o.value, text: o.text};
    });
    var refresh = function () {
      var name = facility.options[facility.selectedIndex] ? facility.options[facility.selectedIndex].text : '';
      // A facility staff set up by hand is labelled "Name (not connected: ...)"; its node
      // types are labelled "Name: node".
      name = name.replace(/ \(not connected[^)]*\)$/, '');
      var chosen = node.value;
      node.innerHTML = '';
      all.forEach(function (o) {
        if (!o.value || o.text.indexOf(name + ':') === 0) {
          var opt = new Option(o.text, o.value, false, o.value === chosen);
          node.add(opt);
        }
      });
    };
    facility.addEventListener('change', refresh);
    refresh();
  }
  if (purpose && extendsField) {
    var wrap = extendsField.closest('.field');
    var toggle = function () { wrap.hidden = purpose.value === 'new'; };
    purpose.addEventListener('change', toggle);
    toggle();
  }
})();
