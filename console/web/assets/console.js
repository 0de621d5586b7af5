// The console's live updates: the page follows the store's changes through
// the event stream its <main data-events> names, and updates itself in place.
(function () {
  "use strict";
  const main = document.querySelector("main[data-events]");
  const live = document.getElementById("live");
  if (!main || !window.EventSource) return;

  const setText = (root, field, value) => {
    root.querySelectorAll('[data-field="' + field + '"]').forEach((el) => { el.textContent = value || ""; });
  };
  const setStuck = (el, reasons) => {
    el.textContent = "";
    (reasons || []).forEach((r) => {
      const s = document.createElement("span");
      s.textContent = "⚠ " + r;
      el.append(s, " ");
    });
    el.hidden = !reasons || reasons.length === 0;
  };

  // The list of a kind's documents, grouped by phase.
  const updateKind = (o) => {
    let row = main.querySelector('tr[data-key="' + CSS.escape(o.key) + '"]');
    let reasons = main.querySelector('tr[data-stuck-for="' + CSS.escape(o.key) + '"]');
    if (o.type === "Deleted") {
      if (row) row.remove();
      if (reasons) reasons.remove();
      recount();
      return;
    }
    if (!row) {
      const tpl = document.getElementById("row-template");
      const frag = tpl.content.cloneNode(true);
      row = frag.querySelector("tr[data-key]");
      reasons = frag.querySelector("tr[data-stuck-for]");
      row.dataset.key = o.key;
      reasons.dataset.stuckFor = o.key;
    }
    ["key", "state", "phase", "age", "inPhase", "lastError", "paused"].forEach((f) => setText(row, f, o[f]));
    row.querySelector('[data-field="url"]').href = o.url;
    row.classList.toggle("stuck", !!(o.stuck && o.stuck.length));
    row.classList.toggle("paused", !!o.paused);
    setStuck(reasons.querySelector('[data-field="stuck"]'), o.stuck);
    reasons.hidden = !o.stuck || o.stuck.length === 0;
    let group = main.querySelector('tbody[data-phase="' + CSS.escape(o.phase) + '"]');
    if (!group) {
      group = document.createElement("tbody");
      group.dataset.phase = o.phase;
      const head = document.createElement("tr");
      head.className = "group";
      head.innerHTML = '<th colspan="7"><span class="name"></span> <span class="n"></span></th>';
      head.querySelector(".name").textContent = o.phase;
      group.append(head);
      main.querySelector("table.objects").append(group);
    }
    if (row.parentNode !== group) {
      // Keep the group ordered by key.
      const after = [...group.querySelectorAll("tr[data-key]")].find((r) => r.dataset.key > o.key);
      group.insertBefore(row, after || null);
      group.insertBefore(reasons, row.nextSibling);
    }
    recount();
  };
  const recount = () => {
    let total = 0;
    main.querySelectorAll("tbody[data-phase]").forEach((g) => {
      const n = g.querySelectorAll("tr[data-key]").length;
      total += n;
      g.hidden = n === 0;
      const count = g.querySelector("tr.group .n");
      if (count) count.textContent = n;
      const chip = main.querySelector('[data-count="' + CSS.escape(g.dataset.phase) + '"] b');
      if (chip) chip.textContent = n;
    });
    setText(main, "total", String(total));
  };

  // One document's page.
  const updateObject = (o) => {
    if (o.key !== main.dataset.key) return;
    if (o.type === "Deleted") {
      setText(main, "phase", "(deleted)");
      return;
    }
    ["state", "phase", "age", "inPhase", "lastError", "paused"].forEach((f) => setText(main, f, o[f]));
    setStuck(document.getElementById("stuck"), o.stuck);
    main.querySelectorAll("svg.machine .node").forEach((n) => {
      n.classList.toggle("current", n.dataset.phase === o.phase);
    });
    if (o.status) document.getElementById("status").textContent = JSON.stringify(o.status, null, 2);
  };

  // The kinds page reads itself again, at most every half second.
  let pending = null;
  const refresh = () => {
    if (pending) return;
    pending = setTimeout(async () => {
      pending = null;
      try {
        const res = await fetch(location.href, { headers: { Accept: "text/html" } });
        const doc = new DOMParser().parseFromString(await res.text(), "text/html");
        const fresh = doc.querySelector("main");
        if (res.ok && fresh) main.innerHTML = fresh.innerHTML;
      } catch (e) { /* the next event tries again */ }
    }, 500);
  };

  const page = main.dataset.page;
  const es = new EventSource(main.dataset.events);
  es.onopen = () => { if (live) { live.textContent = "● live"; live.classList.add("on"); } };
  es.onerror = () => { if (live) { live.textContent = "○ reconnecting"; live.classList.remove("on"); } };
  es.addEventListener("reload", () => { es.close(); location.reload(); });
  es.addEventListener("object", (e) => {
    const o = JSON.parse(e.data);
    if (page === "kind") updateKind(o);
    else if (page === "object") updateObject(o);
    else refresh();
  });
})();
