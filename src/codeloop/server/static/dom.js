"use strict";
// What the live page and the trajectory viewer share: safe DOM building (data only ever
// becomes text nodes), the token, and diffs.

const $ = (sel) => document.querySelector(sel);

// Controls, bidi overrides and invisible characters in repository or model text, shown as
// ⟨U+202E⟩ as the terminal shows them: HTML escaping alone lets them reorder or hide text.
// A lone ZWJ or VS15/VS16 stays (emoji need them).
const HIDDEN = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u00ad\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b\u200c\u200e\u200f\u2028-\u202e\u2060-\u206f\u3164\ufe00-\ufe0d\ufeff\uffa0\ufff9-\ufffb\u{e0000}-\u{e01ef}]|\r(?!\n)/gu;
const visible = (s) => s.replace(HIDDEN, (c) =>
  `⟨U+${c.codePointAt(0).toString(16).toUpperCase().padStart(4, "0")}⟩`);

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  for (const c of children) if (c != null) node.append(c.nodeType ? c : visible(String(c)));
  return node;
}

// --- token ---------------------------------------------------------------------------------

function readToken() {
  const params = new URLSearchParams(location.hash.slice(1));
  const fromUrl = params.get("token");
  if (fromUrl) {
    sessionStorage.setItem("codeloop-token", fromUrl);
    params.delete("token");
    history.replaceState(null, "", location.pathname + (params.toString() ? "#" + params : ""));
  }
  let token = sessionStorage.getItem("codeloop-token");
  if (!token) {
    token = (prompt("codeloop token (from <data dir>/server-token):") || "").trim();
    if (token) sessionStorage.setItem("codeloop-token", token);
  }
  return token;
}

// --- diffs and calls -------------------------------------------------------------------------

function renderDiff(text) {
  const pre = el("pre", { class: "diff" });
  for (const line of (text || "").replace(/\n$/, "").split("\n")) {
    let cls = "";
    if (line.startsWith("+++") || line.startsWith("---") || line.startsWith("diff ")) cls = "file";
    else if (line.startsWith("+")) cls = "add";
    else if (line.startsWith("-")) cls = "del";
    else if (line.startsWith("@@")) cls = "hunk";
    pre.append(el("span", { class: cls }, line || " "));
  }
  return pre;
}

function argsText(call) {
  const a = call.arguments;
  if (!a) return call.raw_arguments || "";
  if (a.command) return a.command;
  if (a.path) return a.path;
  if (a.summary) return a.summary;
  return JSON.stringify(a);
}

