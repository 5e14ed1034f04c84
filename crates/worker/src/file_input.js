function (mode, files, count, x, y) {
  // Files given to the page as a person's choice gives them. `this` is the element.
  // mode "give": `files` ([{data: base64, type, name}]) become this file input's files, and
  //   input and change fire, as after a choice in the file chooser;
  // "give or drop": the same, or, on any other element, dropped on it at (x, y) (upload_image);
  // "check": this must be a file input that takes `count` files (DOM.setFileInputFiles sets
  //   them next);
  // "read": the names, sizes and types of this input's files, each read once (a file the
  //   browser cannot read is named in `unreadable`);
  // "clear": the input's files go (and input and change fire), as after "read" named one.
  const el = this;
  const isInput = el instanceof HTMLInputElement;
  const what = isInput
    ? `an input of type "${el.type}"`
    : "<" + el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + ">";
  const listed = (list) => Array.from(list, (f) => ({ name: f.name, size: f.size, type: f.type }));
  if (!(isInput && el.type === "file")) {
    if (mode !== "give or drop") {
      return { error: `The element is ${what}, not a file input: give the ref of an <input type=file> (read_page or find lists it).` };
    }
    if (isInput) {
      return { error: `The element is ${what}, not a file input; give the ref of an <input type=file>, or a coordinate to drop the image on.` };
    }
  }
  const asInput = isInput && el.type === "file";
  if (asInput && mode !== "read" && mode !== "clear") {
    if (el.disabled) return { error: "The file input is disabled: a person could not choose files for it now." };
    const n = mode === "check" ? count : files.length;
    if (n > 1 && !el.multiple) {
      return { error: `The file input takes one file (it has no multiple attribute); ${n} were given.` };
    }
  }
  if (mode === "check") return { ok: true };
  if (mode === "clear") {
    el.value = "";
    el.dispatchEvent(new Event("input", { bubbles: true, composed: true }));
    el.dispatchEvent(new Event("change", { bubbles: true }));
    return { files: [] };
  }
  if (mode === "read") {
    return (async () => {
      for (const f of el.files) {
        // Its first chunk (a slice would not touch the disk for a file whose size reads 0).
        const reader = f.stream().getReader();
        try {
          await reader.read();
          reader.cancel();
        } catch (e) {
          return { unreadable: f.name, why: String((e && e.name) || e) };
        }
      }
      return { files: listed(el.files) };
    })();
  }
  const dt = new DataTransfer();
  for (const f of files) {
    const bin = atob(f.data);
    const bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    dt.items.add(new File([bytes], f.name, { type: f.type }));
  }
  if (asInput) {
    el.files = dt.files;
    el.dispatchEvent(new Event("input", { bubbles: true, composed: true }));
    el.dispatchEvent(new Event("change", { bubbles: true }));
    return { how: "file input", files: listed(el.files) };
  }
  const opts = { bubbles: true, cancelable: true, composed: true, dataTransfer: dt, clientX: x, clientY: y };
  for (const type of ["dragenter", "dragover", "drop"]) el.dispatchEvent(new DragEvent(type, opts));
  return { how: "drop on " + what, files: listed(dt.files) };
}
