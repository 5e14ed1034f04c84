function (b64, mime, name, x, y) {
  // A real File from the image bytes, given to a file input or dropped on the element at a point.
  const bin = atob(b64);
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  const file = new File([bytes], name, { type: mime });
  const dt = new DataTransfer();
  dt.items.add(file);
  const el = this;
  if (el instanceof HTMLInputElement) {
    if (el.type !== "file") return { error: `The element is an input of type "${el.type}", not a file input; give the ref of an <input type=file>, or a coordinate to drop the image on.` };
    el.files = dt.files;
    el.dispatchEvent(new Event("input", { bubbles: true, composed: true }));
    el.dispatchEvent(new Event("change", { bubbles: true }));
    return { how: "file input", size: file.size };
  }
  const opts = { bubbles: true, cancelable: true, composed: true, dataTransfer: dt, clientX: x, clientY: y };
  for (const type of ["dragenter", "dragover", "drop"]) el.dispatchEvent(new DragEvent(type, opts));
  return { how: "drop on <" + el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + ">", size: file.size };
}
