// Three functions spinning 1:2:3 units in a loop for SECONDS: node_ratio.js SECONDS [REPORT]
"use strict";

function spin(units) {
  let total = 0;
  for (let i = 0; i < units * 200000; i++) total += i % 7;
  return total;
}

function alpha() {
  return spin(1);
}

function beta() {
  return spin(2);
}

function gamma() {
  return spin(3);
}

// With a report file, every 200 ms: "MS ALPHA BETA GAMMA", the wall clock in ms and the CPU time
// in µs spent in each so far (every 4th round is timed: the clock costs), for a test to hold a
// profile's shares against what really ran.
function cpu() {
  const used = process.cpuUsage();
  return used.user + used.system;
}

function work(seconds, report) {
  const end = Date.now() + seconds * 1000;
  const spent = [0, 0, 0];
  let next = Date.now();
  let sink = 0;
  for (let round = 0; Date.now() < end; round++) {
    if (round % 4 !== 0) {
      sink += alpha() + beta() + gamma();
      continue;
    }
    const t0 = cpu();
    sink += alpha();
    const t1 = cpu();
    sink += beta();
    const t2 = cpu();
    sink += gamma();
    const t3 = cpu();
    spent[0] += t1 - t0;
    spent[1] += t2 - t1;
    spent[2] += t3 - t2;
    if (report && Date.now() >= next) {
      require("fs").appendFileSync(report, `${Date.now()} ${spent.join(" ")}\n`);
      next += 200;
    }
  }
  return sink;
}

work(Number(process.argv[2] || 5), process.argv[3]);
