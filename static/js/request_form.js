// Progressive enhancement of the request form: node types follow the chosen facility, the hours
// are asked in its unit (GPU-hours, or CPU-hours on a facility without GPUs: the server's words,
// from #facility-units), and the "existing allocation" field shows only for renewals, top-ups
// and trial conversions.
(function () {
  var facility = document.getElementById('id_facility');
  var node = document.getElementById('id_node_type');
  var purpose = document.getElementById('id_purpose');
  var extendsField = document.getElementById('id_extends');
  var unitsData = document.getElementById('facility-units');
  var hours = document.getElementById('id_gpu_hours');
  var cpuHours = document.getElementById('id_cpu_hours');
  if (facility && unitsData && hours) {
    var units = JSON.parse(unitsData.textContent);
    var field = hours.closest('.field');
    var label = field.querySelector('label');
    var help = document.getElementById('id_gpu_hours_help');
    if (!help) {
      help = document.createElement('p');
      help.className = 'help';
      help.id = 'id_gpu_hours_help';
      label.after(help);
    }
    var gap = label.firstChild.textContent.match(/\s*$/)[0];  // before the required star
    var original = {label: label.firstChild.textContent.trim(), help: help.textContent};
    var kindChosen = function () {
      var checked = document.querySelector('input[name=kind]:checked');
      return checked ? checked.value : '';
    };
    var relabel = function () {
      var said = units[facility.value];
      label.firstChild.textContent = (said ? said.label : original.label) + gap;
      var words = said ? [said.per, kindChosen() === 'trial' ? said.cap : ''] : [original.help];
      help.textContent = words.filter(Boolean).join(' ');
      help.hidden = !help.textContent;
      if (cpuHours) { cpuHours.closest('.field').hidden = Boolean(said && said.cpu); }
      // The server's note for a CPU facility without this script ("not needed here"): the field
      // is hidden there now, and the note is wrong for any other facility.
      var cpuHelp = document.getElementById('id_cpu_hours_help');
      if (cpuHelp) { cpuHelp.hidden = true; }
    };
    facility.addEventListener('change', relabel);
    document.querySelectorAll('input[name=kind]').forEach(function (radio) {
      radio.addEventListener('change', relabel);
    });
    relabel();
  }
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
