// static/boards/board_rules.js under `node --test` (run by .ci/test): loaded as the browser
// loads it, a classic script, then its rules checked (linted by ESLint; the file under test is
// type-checked strictly by jsconfig.pure.json). The task filter runs the cases of
// tests/data/task_filter_cases.json, which tests/coordination/selectors/test_filters.py runs through
// the server's TaskFilter on PostgreSQL.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { runInThisContext } from "node:vm";

const root = new URL("../../", import.meta.url);
const source = readFileSync(new URL("static/boards/board_rules.js", root), "utf8");
const rules = runInThisContext(`${source}\nBoardRules;`, { filename: "static/boards/board_rules.js" });
const shared = JSON.parse(readFileSync(new URL("tests/data/task_filter_cases.json", root), "utf8"));

for (const c of shared.cases) {
  test(`task filter: ${c.name}`, () => {
    const kept = shared.tasks.filter((t) => rules.matches(t, c.applied));
    assert.deepEqual(kept.map((t) => t.key).sort(), c.matches);
  });
}

test("task filter: the shared cases cover every filter board.js knows", () => {
  const used = new Set(shared.cases.flatMap((c) => Object.keys(c.applied)));
  assert.deepEqual([...used].sort(), ["agent", "criticality", "goal", "priority", "q", "sprint", "status"]);
});

test("placement: in order, at the end, and none in an empty column", () => {
  assert.deepEqual(rules.placement(["1-a", "3-c"], "2-b", 0), { at: 1, dropLast: false });
  assert.deepEqual(rules.placement(["1-a", "3-c"], "9-z", 0), { at: 2, dropLast: false });
  assert.deepEqual(rules.placement([], "2-b", 50), { at: 0, dropLast: false });
});

test("placement: a card with the same order goes after its equal (the server's id breaks ties)", () => {
  assert.deepEqual(rules.placement(["2-b", "3-c"], "2-b", 0), { at: 1, dropLast: false });
});

test("placement: a full column takes a card inside its cap and drops its last one", () => {
  assert.deepEqual(rules.placement(["1-a", "3-c"], "2-b", 2), { at: 1, dropLast: true });
});

test("placement: a card past a full column's cap is only counted", () => {
  assert.equal(rules.placement(["1-a", "3-c"], "4-d", 2), null);
});

test("human: minutes and seconds, hours and minutes, days and hours; the sign dropped", () => {
  assert.equal(rules.human(0), "0:00");
  assert.equal(rules.human(245.4), "4:05");
  assert.equal(rules.human(-245), "4:05");
  assert.equal(rules.human(3599), "59:59");
  assert.equal(rules.human(3600 + 7 * 60), "1h07m");
  assert.equal(rules.human(3 * 86400 + 4 * 3600 + 59), "3d04h");
});

test("duration: as the server's duration_text", () => {
  assert.equal(rules.duration(-5), "0 s");
  assert.equal(rules.duration(45.9), "45 s");
  assert.equal(rules.duration(12 * 60 + 59), "12 min");
  assert.equal(rules.duration(2 * 3600 + 56 * 60), "2 h 56 min");
  assert.equal(rules.duration(3 * 86400 + 4 * 3600), "3 d 4 h");
});

test("announcement: three sentences, then how many more", () => {
  assert.equal(rules.announcement(["A.", "B."]), "A. B.");
  assert.equal(rules.announcement(["A.", "B.", "C.", "D."]), "A. B. C. And 1 more change.");
  assert.equal(rules.announcement(["A.", "B.", "C.", "D.", "E."]), "A. B. C. And 2 more changes.");
});

test("stepFocus: from no card to the first or last; stops at either end", () => {
  assert.equal(rules.stepFocus(-1, 1, 4), 0);
  assert.equal(rules.stepFocus(-1, -1, 4), 3);
  assert.equal(rules.stepFocus(1, 1, 4), 2);
  assert.equal(rules.stepFocus(3, 1, 4), 3);
  assert.equal(rules.stepFocus(0, -1, 4), 0);
});

test("narrowedIn: typed text in the card's text, ignoring case and spaces; empty keeps all", () => {
  assert.equal(rules.narrowedIn("  LOGIN ", "T-2 Login form"), true);
  assert.equal(rules.narrowedIn("t-2", "T-2 Login form"), true);
  assert.equal(rules.narrowedIn("logout", "T-2 Login form"), false);
  assert.equal(rules.narrowedIn("   ", "T-2 Login form"), true);
});
