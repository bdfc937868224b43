const FlameView = (() => {
  "use strict";
  // Flame graphs drawn in the page from collapsed stacks. Names from a profile are hostile text:
  // they only ever reach the DOM through textContent and setAttribute.
  const svgNs = "http://www.w3.org/2000/svg";
  const frameHeight = 16;
  const rowHeight = 17;
  const charWidth = 7;
  const matchFill = "rgb(230,0,230)";

  function makeNode(name, parent) {
    return { name, total: 0, self: 0, children: new Map(), parent };
  }

  function childOf(node, name) {
    let child = node.children.get(name);
    if (!child) {
      child = makeNode(name, node);
      node.children.set(name, child);
    }
    return child;
  }

  // gProfiler's collapsed lines: "INDEX;CONTAINER;PROCESS;frame;...;frame COUNT", without the
  // application metadata index where the header says application_metadata_enabled is false. The
  // tree's first level is the process: the container is chosen apart, by the server's filter.
  function parse(text) {
    const root = makeNode("all", null);
    const lines = String(text).split("\n");
    let indexed = true;
    for (let line of lines) {
      if (line.endsWith("\r")) line = line.slice(0, -1);
      if (line.startsWith("#")) {
        indexed = indexed && !/"application_metadata_enabled"\s*:\s*false/.test(line);
        continue;
      }
      if (line === "") continue;
      const space = line.lastIndexOf(" ");
      if (space <= 0) continue;
      const countText = line.slice(space + 1);
      if (!/^[0-9]+$/.test(countText)) continue;
      const count = Number(countText);
      if (!(count > 0) || !Number.isSafeInteger(count)) continue;
      const frames = line.slice(0, space).split(";");
      const first = indexed ? 2 : 1;
      if (first >= frames.length) continue;
      let node = root;
      root.total += count;
      for (let i = first; i < frames.length; i++) {
        node = childOf(node, frames[i]);
        node.total += count;
      }
      node.self += count;
    }
    return root;
  }

  function processNames(root) {
    return [...root.children.keys()].sort();
  }

  // Adds `source`'s whole subtree into `target` (same name level), iteratively.
  function mergeInto(target, source) {
    const pending = [[target, source]];
    while (pending.length > 0) {
      const [to, from] = pending.pop();
      to.total += from.total;
      to.self += from.self;
      for (const [name, child] of from.children) pending.push([childOf(to, name), child]);
    }
  }

  function filterRoot(root, keep) {
    const copy = makeNode(root.name, null);
    copy.self = root.self;
    copy.total = root.self;
    for (const [name, child] of root.children) {
      if (keep(name)) mergeInto(childOf(copy, name), child);
    }
    for (const child of copy.children.values()) copy.total += child.total;
    return copy;
  }

  // Visits every node below `root` depth first; `enter` may return false to skip a subtree and
  // `leave` runs once a visited node's subtree is done.
  function walk(root, enter, leave) {
    const pending = [];
    for (const child of root.children.values()) pending.push({ node: child, open: false });
    while (pending.length > 0) {
      const item = pending.pop();
      if (item.open) {
        if (leave) leave(item.node);
        continue;
      }
      if (enter(item.node) === false) continue;
      item.open = true;
      pending.push(item);
      for (const child of item.node.children.values()) pending.push({ node: child, open: false });
    }
  }

  // gProfiler's frame suffixes of each language's runtime; the kernel's is "_[k]". A process's
  // runtime is the first of these its frames show; without one, "kernel" where every frame is
  // the kernel's and "native" otherwise (perf's frames, Node's among them, carry no suffix).
  const runtimeSuffixes = [["Java", ["_[j]", "_[i]", "_[0]", "_[1]"]], ["Python", ["_[p]", "_[pn]"]],
    ["Ruby", ["_[rb]"]], ["PHP", ["_[php]"]], [".NET", ["_[net]"]]];

  function runtimeOf(process) {
    const seen = new Set();
    let onlyKernel = true;
    walk(process, (node) => {
      if (!node.name.endsWith("]")) {
        onlyKernel = false;
        return;
      }
      if (node.name.endsWith("_[k]")) return;
      onlyKernel = false;
      for (const [runtime, suffixes] of runtimeSuffixes) {
        if (suffixes.some((suffix) => node.name.endsWith(suffix))) seen.add(runtime);
      }
    });
    const language = runtimeSuffixes.find(([runtime]) => seen.has(runtime));
    if (language) return language[0];
    return onlyKernel && process.children.size > 0 ? "kernel" : "native";
  }

  // Each process's runtime, by the process's name (the tree's first level).
  function processRuntimes(root) {
    const runtimes = new Map();
    for (const [name, process] of root.children) runtimes.set(name, runtimeOf(process));
    return runtimes;
  }

  function topFunctions(root) {
    const byName = new Map();
    const onPath = new Map();
    walk(root, (node) => {
      let entry = byName.get(node.name);
      if (!entry) {
        entry = { name: node.name, self: 0, total: 0 };
        byName.set(node.name, entry);
      }
      entry.self += node.self;
      const depth = onPath.get(node.name) || 0;
      if (depth === 0) entry.total += node.total;
      onPath.set(node.name, depth + 1);
    }, (node) => {
      onPath.set(node.name, onPath.get(node.name) - 1);
    });
    return [...byName.values()].sort((a, b) =>
      b.self - a.self || b.total - a.total || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  function sandwich(root, name) {
    const callees = makeNode(name, null);
    const callers = makeNode(name, null);
    walk(root, (node) => {
      if (node.name !== name) return true;
      mergeInto(callees, node);
      const weight = node.total;
      callers.total += weight;
      let into = callers;
      for (let up = node.parent; up && up.parent; up = up.parent) {
        into = childOf(into, up.name);
        into.total += weight;
      }
      into.self += weight;
      return false;
    });
    return { callers, callees };
  }

  function hashOf(text) {
    let hash = 2166136261;
    for (let i = 0; i < text.length; i++) {
      hash ^= text.charCodeAt(i);
      hash = Math.imul(hash, 16777619);
    }
    return hash >>> 0;
  }

  // Warm hues (red to yellow), as classic flame graphs draw them.
  function warmColor(node) {
    const hash = hashOf(node.name);
    const red = 205 + (hash % 51);
    const green = Math.round(((hash >>> 8) % 1000) / 1000 * 210);
    const blue = (hash >>> 20) % 56;
    return `rgb(${red},${green},${blue})`;
  }

  function byNameOrder(a, b) {
    return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
  }

  function fitLabel(name, width) {
    if (width < 20) return "";
    const fits = Math.floor((width - 6) / charWidth);
    if (name.length <= fits) return name;
    return fits < 3 ? "" : name.slice(0, fits - 2) + "..";
  }

  // A search: text to find in a name, whatever its case, or a regular expression between
  // slashes ("/^java\./"); frame names are full of "[", "(" and ".", which a plain search takes
  // as they are.
  function matcherFor(text) {
    if (text === "") return null;
    const expression = /^\/(.+)\/$/.exec(text);
    if (expression) {
      try {
        const pattern = new RegExp(expression[1], "i");
        return (name) => pattern.test(name);
      } catch (error) {
        // not an expression: searched as text
      }
    }
    const lower = text.toLowerCase();
    return (name) => name.toLowerCase().includes(lower);
  }

  class FlameGraph {
    constructor(container, options = {}) {
      this.container = container;
      this.inverted = Boolean(options.inverted);
      this.root = null;
      this.focus = null;
      this.matcher = null;
      this.drawn = [];
      this.nodeOf = new WeakMap();
      this.svg = document.createElementNS(svgNs, "svg");
      this.svg.setAttribute("width", "100%");
      this.svg.setAttribute("role", "img");
      this.svg.setAttribute("aria-label", "Empty flame graph");
      this.svg.addEventListener("click", (event) => this.clicked(event));
      container.appendChild(this.svg);
    }

    render(root) {
      if (root !== this.root) this.focus = null;
      this.root = root;
      this.draw();
    }

    reset() {
      this.focus = null;
      if (this.root) this.draw();
    }

    search(text) {
      this.matcher = matcherFor(String(text ?? ""));
      this.paintMatches();
      if (!this.matcher || !this.root || !(this.root.total > 0)) return 0;
      let matched = 0;
      walk(this.root, (node) => {
        if (!this.matcher(node.name)) return true;
        matched += node.total;
        return false;
      });
      return matched / this.root.total * 100;
    }

    clicked(event) {
      let target = event.target;
      while (target && target !== this.svg && !this.nodeOf.has(target)) target = target.parentNode;
      const node = target ? this.nodeOf.get(target) : undefined;
      if (!node) return;
      this.focus = node === this.root ? null : node;
      this.draw();
    }

    // Frames to draw as {node, x, width, level}: the focus's ancestors and the focus span the
    // whole width; below the focus each frame is as wide as its share of the focus.
    layout(width) {
      const focus = this.focus || this.root;
      const frames = [];
      const chain = [];
      for (let at = focus; at; at = at.parent) chain.push(at);
      chain.reverse();
      chain.forEach((node, level) => frames.push({ node, x: 0, width, level }));
      const scale = focus.total > 0 ? width / focus.total : 0;
      const pending = [frames[frames.length - 1]];
      while (pending.length > 0) {
        const parent = pending.pop();
        let x = parent.x;
        for (const child of [...parent.node.children.values()].sort(byNameOrder)) {
          const childWidth = child.total * scale;
          if (childWidth >= 0.5) {
            const frame = { node: child, x, width: childWidth, level: parent.level + 1 };
            frames.push(frame);
            pending.push(frame);
          }
          x += childWidth;
        }
      }
      return frames;
    }

    draw() {
      const svg = this.svg;
      while (svg.firstChild) svg.removeChild(svg.firstChild);
      this.drawn = [];
      this.nodeOf = new WeakMap();
      const width = this.container.clientWidth || 1200;
      const frames = this.layout(width);
      let depth = 0;
      for (const frame of frames) depth = Math.max(depth, frame.level);
      const height = (depth + 1) * rowHeight;
      svg.setAttribute("height", String(height));
      svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
      const kind = this.inverted ? "Icicle graph" : "Flame graph";
      const zoom = this.focus ? ", zoomed on " + this.focus.name : "";
      svg.setAttribute("aria-label", `${kind} of ${this.root.total} samples${zoom}`);
      const rootTotal = this.root.total;
      for (const frame of frames) {
        const node = frame.node;
        const y = this.inverted ? frame.level * rowHeight : (depth - frame.level) * rowHeight;
        const group = document.createElementNS(svgNs, "g");
        group.setAttribute("class", "frame");
        group.setAttribute("data-name", node.name);
        group.setAttribute("data-total", String(node.total));
        const title = document.createElementNS(svgNs, "title");
        const percent = rootTotal > 0 ? (node.total / rootTotal * 100).toFixed(2) : "0.00";
        title.textContent = `${node.name}\n${node.total} samples (${percent}%)`;
        group.appendChild(title);
        const rect = document.createElementNS(svgNs, "rect");
        rect.setAttribute("x", frame.x.toFixed(2));
        rect.setAttribute("y", String(y));
        rect.setAttribute("width", frame.width.toFixed(2));
        rect.setAttribute("height", String(frameHeight));
        const fill = warmColor(node);
        rect.setAttribute("fill", fill);
        group.appendChild(rect);
        const label = fitLabel(node.name, frame.width);
        if (label !== "") {
          const text = document.createElementNS(svgNs, "text");
          text.setAttribute("x", (frame.x + 3).toFixed(2));
          text.setAttribute("y", String(y + 12));
          text.setAttribute("font-size", "12");
          text.setAttribute("font-family", "monospace");
          text.textContent = label;
          group.appendChild(text);
        }
        svg.appendChild(group);
        this.nodeOf.set(group, node);
        this.drawn.push({ group, rect, node, fill });
      }
      this.paintMatches();
    }

    paintMatches() {
      for (const { group, rect, node, fill } of this.drawn) {
        const match = this.matcher !== null && node !== this.root && this.matcher(node.name);
        group.setAttribute("class", match ? "frame match" : "frame");
        rect.setAttribute("fill", match ? matchFill : fill);
      }
    }
  }

  return {
    parse, processNames, processRuntimes, filterRoot, topFunctions, sandwich, matcherFor,
    FlameGraph,
  };
})();
