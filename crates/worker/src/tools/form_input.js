function (value) {
  // Sets a form control so that frameworks notice: the prototype's native value setter (React's
  // value tracker then sees a change), then `input` and `change` events, as a user's edit does.
  let el = this;
  if (el instanceof HTMLLabelElement && el.control) el = el.control;
  const tag = (el.tagName || "").toLowerCase();
  const fire = () => {
    el.dispatchEvent(new Event("input", { bubbles: true, composed: true }));
    el.dispatchEvent(new Event("change", { bubbles: true }));
  };
  const setNative = (proto, prop, v) => {
    const d = Object.getOwnPropertyDescriptor(proto, prop);
    if (d && d.set) d.set.call(el, v); else el[prop] = v;
  };
  const asBool = (v) => {
    if (typeof v === "boolean") return v;
    if (v === "true" || v === 1) return true;
    if (v === "false" || v === 0) return false;
    return null;
  };
  const fits = "form_input sets: text-like inputs (text, email, password, search, url, tel, number, date, time, range, …) and textareas with a string or number; selects with an option's value or visible text; checkboxes and radios with true/false; contenteditable elements with a string.";
  if (tag === "select") {
    const options = Array.from(el.options);
    const want = String(value).trim();
    const opt = options.find((o) => o.value === want)
      || options.find((o) => o.text.trim() === want)
      || options.find((o) => o.text.trim().toLowerCase() === want.toLowerCase());
    const list = options.map((o) => `"${o.text.trim()}" (value "${o.value}")`).join(", ");
    if (!opt) return { error: `The select has no option "${want}". Options: ${list}.` };
    if (opt.disabled) return { error: `The option "${opt.text.trim()}" is disabled. Options: ${list}.` };
    const prev = el.selectedOptions.length ? el.selectedOptions[0].text.trim() : "";
    el.focus();
    setNative(HTMLSelectElement.prototype, "value", opt.value);
    fire();
    return { kind: "select", previous: prev, value: opt.text.trim() };
  }
  if (tag === "input") {
    const type = (el.type || "text").toLowerCase();
    if (type === "checkbox" || type === "radio") {
      const want = asBool(value);
      if (want === null) return { error: `This is a ${type}: give value true or false, not ${JSON.stringify(value)}.` };
      const prev = el.checked;
      if (el.disabled) return { error: `This ${type} is disabled.` };
      // A click is what frameworks listen to for these; it fires input and change itself.
      if (el.checked !== want) el.click();
      if (el.checked !== want) { setNative(HTMLInputElement.prototype, "checked", want); fire(); }
      return { kind: type, previous: String(prev), value: String(el.checked) };
    }
    if (["button", "submit", "reset", "image", "file", "hidden"].includes(type)) {
      return { error: `This is an input of type "${type}", which form_input can't set (use computer clicks for buttons, upload_image for files). ${fits}` };
    }
    if (typeof value === "boolean") return { error: `This is a ${type} input: give a string or number, not a boolean.` };
    const prev = el.value;
    const want = String(value);
    el.focus();
    setNative(HTMLInputElement.prototype, "value", want);
    if (el.value !== want) {
      setNative(HTMLInputElement.prototype, "value", prev);
      const formats = { date: "YYYY-MM-DD", time: "HH:MM", "datetime-local": "YYYY-MM-DDTHH:MM", month: "YYYY-MM", week: "YYYY-W##", number: "a number", range: `a number from ${el.min || 0} to ${el.max || 100}`, color: "#rrggbb" };
      return { error: `The ${type} input did not accept ${JSON.stringify(want)}; it takes ${formats[type] || "another format"}.` };
    }
    fire();
    return { kind: type, previous: prev, value: el.value };
  }
  if (tag === "textarea") {
    if (typeof value === "boolean") return { error: "This is a textarea: give a string, not a boolean." };
    const prev = el.value;
    el.focus();
    setNative(HTMLTextAreaElement.prototype, "value", String(value));
    fire();
    return { kind: "textarea", previous: prev, value: el.value };
  }
  if (el.isContentEditable) {
    const prev = el.innerText;
    el.focus();
    const sel = el.ownerDocument.getSelection();
    const range = el.ownerDocument.createRange();
    range.selectNodeContents(el);
    sel.removeAllRanges();
    sel.addRange(range);
    // insertText goes through the editor, so beforeinput/input listeners see a real edit.
    if (!el.ownerDocument.execCommand("insertText", false, String(value))) {
      el.textContent = String(value);
      el.dispatchEvent(new InputEvent("input", { bubbles: true, inputType: "insertText", data: String(value) }));
    }
    return { kind: "contenteditable", previous: prev, value: el.innerText };
  }
  const role = el.getAttribute && el.getAttribute("role");
  return { error: `The element is a <${tag || el.nodeName.toLowerCase()}>${role ? ` with role "${role}"` : ""}, not a form field. ${fits}` };
}
