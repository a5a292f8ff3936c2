// ESLint (flat config) for the board's browser scripts and their node tests, run by .ci/test
// with --max-warnings 0. Recommended rules only: the served files are plain scripts, no build.
const js = require("@eslint/js");
const globals = require("globals");

module.exports = [
  { ignores: ["node_modules/", ".venv/", "var/", "staticfiles/"] },
  js.configs.recommended,
  {
    files: ["static/**/*.js"],
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: "script",
      globals: globals.browser,
    },
  },
  {
    // Defined by static/boards/board_rules.js, loaded before board.js by the board's templates.
    files: ["static/boards/board.js"],
    languageOptions: { globals: { BoardRules: "readonly" } },
  },
  {
    // Defined by static/boards/live_socket.js, loaded before them by their templates.
    files: ["static/boards/board.js", "static/boards/activity.js"],
    languageOptions: { globals: { liveSocket: "readonly" } },
  },
  {
    files: ["tests/js/**/*.mjs"],
    languageOptions: { ecmaVersion: 2022, sourceType: "module", globals: globals.node },
  },
  {
    files: ["eslint.config.js"],
    languageOptions: { sourceType: "commonjs", globals: globals.node },
  },
];
