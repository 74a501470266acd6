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
