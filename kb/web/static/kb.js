// kb serve: the little JavaScript the pages need (no framework, no build step).
// Research text reaches the DOM only through textContent, never innerHTML.
"use strict";

function treePage() {
  const tree = document.getElementById("tree");
  const box = document.getElementById("tree-search");
  if (!tree || !box) return;
  const nodes = Array.from(tree.querySelectorAll("li.node"));
  const hitsLabel = document.getElementById("tree-hits");
  let hits = [];
  let current = -1;
  let timer = null;

  function detailsOf(li) { return li.querySelector(":scope > details"); }
  function restoreFolds() {
    for (const li of nodes) {
      const d = detailsOf(li);
      if (d) d.open = d.dataset.open === "1";
    }
  }
  function search() {
    const q = box.value.trim().toLowerCase();
    for (const li of nodes) li.classList.remove("hit", "current", "hidden");
    hits = [];
    current = -1;
    if (!q) { restoreFolds(); hitsLabel.textContent = ""; return; }
    const keep = new Set();
    for (const li of nodes) {
      if (li.dataset.t.includes(q)) {
        hits.push(li);
        li.classList.add("hit");
        for (let p = li; p && p !== tree; p = p.parentElement) {
          if (p.matches && p.matches("li.node")) keep.add(p);
        }
      }
    }
    for (const li of nodes) {
      if (!keep.has(li)) { li.classList.add("hidden"); continue; }
      const d = detailsOf(li);
      // Unfold the path to every match; a match itself keeps its fold.
      if (d && !li.classList.contains("hit")) d.open = true;
    }
    hitsLabel.textContent = hits.length + (hits.length === 1 ? " match" : " matches");
    if (hits.length) jump(0);
  }
  function jump(i) {
    if (!hits.length) return;
    if (current >= 0) hits[current].classList.remove("current");
    current = (i + hits.length) % hits.length;
    hits[current].classList.add("current");
    hits[current].scrollIntoView({ block: "center" });
    hitsLabel.textContent = (current + 1) + " / " + hits.length + " matches";
  }
  box.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(search, 120); });
  box.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter") { ev.preventDefault(); clearTimeout(timer); if (!hits.length) search(); else jump(current + 1); }
  });
  document.getElementById("tree-expand").addEventListener("click", () => {
    for (const li of nodes) { const d = detailsOf(li); if (d) d.open = true; }
  });
  document.getElementById("tree-collapse").addEventListener("click", () => { box.value = ""; search(); });
  // A click on a link inside a summary follows the link instead of folding.
  tree.addEventListener("click", (ev) => {
    if (ev.target.closest("a")) ev.stopPropagation();
  });
}

document.addEventListener("DOMContentLoaded", () => {
  treePage();
  if (window.kbTrail) window.kbTrail();
});
