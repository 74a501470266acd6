// Each figure opens at full size: its image is wrapped in a link to the image itself (the SVG),
// which a reader on a narrow screen can zoom.
document.addEventListener("DOMContentLoaded", () => {
  for (const img of document.querySelectorAll("figure img")) {
    if (img.closest("a")) continue;
    const link = document.createElement("a");
    link.href = img.src;
    link.className = "kvtier-zoom";
    link.title = "Open the figure at full size";
    img.parentNode.insertBefore(link, img);
    link.appendChild(img);
  }
});

// A table box that is wider than the screen says so: its wrapper gets .kvtier-scrolls (the CSS
// shows a shade on the right edge and a line "scroll sideways for more columns"), and
// .kvtier-at-end once the reader has scrolled to the last column.
function kvtierMarkScrolling() {
  for (const box of document.querySelectorAll(".kvtier-table-box")) {
    const wrap = box.closest(".kvtier-table-wrap");
    if (!wrap || box.clientWidth === 0) continue;
    wrap.classList.toggle("kvtier-scrolls", box.scrollWidth > box.clientWidth + 1);
    wrap.classList.toggle("kvtier-at-end", box.scrollLeft + box.clientWidth >= box.scrollWidth - 1);
  }
}
document.addEventListener("DOMContentLoaded", () => {
  kvtierMarkScrolling();
  for (const box of document.querySelectorAll(".kvtier-table-box")) {
    box.addEventListener("scroll", kvtierMarkScrolling, {passive: true});
  }
  // a details block opened later shows its table only then
  for (const details of document.querySelectorAll("details")) {
    details.addEventListener("toggle", kvtierMarkScrolling);
  }
});
window.addEventListener("resize", kvtierMarkScrolling);
window.addEventListener("load", kvtierMarkScrolling);
