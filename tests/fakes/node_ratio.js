// Three functions spinning 1:2:3 units, called from a loop for SECONDS, as node_ratio.js SECONDS.
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

function work(seconds) {
  const end = Date.now() + seconds * 1000;
  let sink = 0;
  while (Date.now() < end) sink += alpha() + beta() + gamma();
  return sink;
}

work(Number(process.argv[2] || 5));
