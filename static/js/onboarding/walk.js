// Progressive enhancement of /onboarding/: the page already works with plain links and GET
// forms. With this script the walk is instant: the chart is embedded as JSON, every question
// and outcome is already in the page (hidden), and a step only swaps which one is shown, moves
// the highlight on the diagram, updates the breadcrumb and the links, and pushes the path into
// the URL (shareable, Back button works). Each step is reported for the drop-off analytics.
(function () {
  'use strict';
  var root = document.getElementById('onb');
  var dataEl = document.getElementById('onboarding-flow');
  if (!root || !dataEl || !window.history || !window.fetch) { return; }
  var flow = JSON.parse(dataEl.textContent);
  var walkUrl = root.getAttribute('data-walk-url');
  var questions = {};
  var outcomes = {};
  flow.questions.forEach(function (q) { questions[q.key] = q; });
  flow.outcomes.forEach(function (o) { outcomes[o.key] = o; });

  function resolve(path) {
    var pos = {steps: [], question: questions[flow.start] || null, outcome: null, facts: {}};
    for (var i = 0; i < path.length && pos.question; i++) {
      var choice = pos.question.choices.filter(function (c) { return c.key === path[i]; })[0];
      if (!choice) { break; }
      pos.steps.push([pos.question, choice]);
      Object.keys(choice.sets || {}).forEach(function (k) { pos.facts[k] = choice.sets[k]; });
      pos.question = choice.next.type === 'question' ? questions[choice.next.key] : null;
      pos.outcome = choice.next.type === 'outcome' ? outcomes[choice.next.key] : null;
    }
    pos.path = pos.steps.map(function (s) { return s[1].key; });
    return pos;
  }

  function urlFor(path) {
    return path.length ? walkUrl + '?path=' + path.map(encodeURIComponent).join(',') : walkUrl;
  }

  function withParams(base, params) {
    var url = new URL(base, window.location.origin);
    Object.keys(params).forEach(function (k) {
      if (params[k]) { url.searchParams.set(k, params[k]); } else { url.searchParams.delete(k); }
    });
    return url.pathname + url.search;
  }

  function pathFromLocation() {
    var raw = new URLSearchParams(window.location.search).get('path') || '';
    return raw.split(',').map(function (s) { return s.trim(); }).filter(Boolean);
  }

  function renderCrumbs(pos) {
    var list = document.getElementById('onb-crumbs');
    list.textContent = '';
    if (!pos.steps.length) {
      var none = document.createElement('li');
      none.className = 'muted onb-none';
      none.textContent = 'None yet: start with the first question.';
      list.appendChild(none);
    }
    pos.steps.forEach(function (step, i) {
      var li = document.createElement('li');
      var a = document.createElement('a');
      var prefix = pos.path.slice(0, i);
      a.href = urlFor(prefix);
      a.setAttribute('data-path', prefix.join(','));
      a.title = 'Change this answer';
      a.appendChild(document.createTextNode(step[0].text + ' '));
      var strong = document.createElement('strong');
      strong.textContent = step[1].label;
      a.appendChild(strong);
      li.appendChild(a);
      list.appendChild(li);
    });
  }

  function renderDiagram(pos, current) {
    root.querySelectorAll('.flow-diagram').forEach(function (svg) { highlight(svg, pos, current); });
  }

  function highlight(svg, pos, current) {
    var onPath = {};
    var taken = {};
    pos.steps.forEach(function (s) { onPath['q:' + s[0].key] = 1; taken[s[0].key + ':' + s[1].key] = 1; });
    onPath[current] = 1;
    svg.querySelectorAll('[data-node]').forEach(function (el) {
      var ref = el.getAttribute('data-node');
      el.classList.toggle('on-path', !!onPath[ref]);
      el.classList.toggle('current', ref === current);
    });
    svg.querySelectorAll('[data-edge]').forEach(function (el) {
      el.classList.toggle('on-path', !!taken[el.getAttribute('data-edge')]);
    });
    var desc = svg.querySelector('desc');
    if (desc) {
      var answered = pos.steps.map(function (s) { return s[0].text + ' ' + s[1].label; }).join('; ');
      desc.textContent = 'A flowchart of ' + flow.questions.length + ' questions and ' +
        flow.outcomes.length + ' recommendations. ' +
        (answered ? 'Your answers so far: ' + answered + '.' : 'You are at the first question.');
    }
  }

  function render(pos, moveFocus) {
    var current = pos.outcome ? 'o:' + pos.outcome.key : (pos.question ? 'q:' + pos.question.key : '');
    var handover = pos.steps.some(function (s) { return s[0].recommender_handover; }) ||
      (pos.question && pos.question.recommender_handover);
    var backPath = pos.path.slice(0, -1);
    root.querySelectorAll('.onb-step').forEach(function (section) {
      section.hidden = section.getAttribute('data-node') !== current;
    });
    root.querySelectorAll('input[name=prior]').forEach(function (el) { el.value = pos.path.join(','); });
    root.querySelectorAll('input[name=answer]').forEach(function (el) { el.checked = false; });
    root.querySelectorAll('.onb-back').forEach(function (el) {
      el.href = urlFor(backPath);
      el.setAttribute('data-path', backPath.join(','));
      el.hidden = !pos.steps.length;
    });
    root.querySelectorAll('.onb-request, .onb-request-alt').forEach(function (el) {
      el.href = withParams(el.getAttribute('data-base'), {data_sensitivity: pos.facts.data_sensitivity});
    });
    root.querySelectorAll('.onb-recommend').forEach(function (el) {
      el.href = withParams('/recommend/', {data_sensitivity: pos.facts.data_sensitivity, needs: pos.facts.needs});
    });
    root.querySelectorAll('.onb-outcome .onb-handover').forEach(function (el) { el.hidden = !handover; });
    renderCrumbs(pos);
    renderDiagram(pos, current);
    var title = pos.outcome ? pos.outcome.title : (pos.question ? pos.question.text : '');
    document.title = title + ' · Onboarding · Research compute portal';
    var live = document.getElementById('onb-live');
    if (live) {
      live.textContent = pos.outcome ? 'Recommendation: ' + pos.outcome.title :
        'Question ' + (pos.steps.length + 1) + ': ' + title;
    }
    if (moveFocus) {
      var heading = root.querySelector('.onb-step:not([hidden]) h2');
      if (heading) { heading.focus(); }
    }
  }

  function track(pos) {
    if (!root.getAttribute('data-track')) { return; }
    var csrf = document.querySelector('input[name=csrfmiddlewaretoken]');
    var body = new URLSearchParams({path: pos.path.join(',')});
    fetch(root.getAttribute('data-track-url'), {
      method: 'POST', body: body, credentials: 'same-origin', keepalive: true,
      headers: csrf ? {'X-CSRFToken': csrf.value} : {}
    }).catch(function () { /* analytics must never break the walk */ });
  }

  function go(path) {
    var pos = resolve(path);
    window.history.pushState({path: pos.path}, '', urlFor(pos.path));
    render(pos, true);
    track(pos);
  }

  root.addEventListener('submit', function (event) {
    var form = event.target;
    if (!form.classList.contains('onb-form')) { return; }
    var chosen = form.querySelector('input[name=answer]:checked');
    if (!chosen) { return; }  // let the browser say that an answer is required
    event.preventDefault();
    var prior = form.querySelector('input[name=prior]').value;
    go(resolve(prior ? prior.split(',') : []).path.concat([chosen.value]));
  });
  root.addEventListener('click', function (event) {
    var link = event.target.closest('a[data-path]');
    if (!link || event.ctrlKey || event.metaKey || event.shiftKey || event.button !== 0) { return; }
    event.preventDefault();
    var raw = link.getAttribute('data-path');
    go(raw ? raw.split(',') : []);
  });
  window.addEventListener('popstate', function () { render(resolve(pathFromLocation()), true); });
  window.history.replaceState({path: pathFromLocation()}, '', window.location.href);
})();
