// The UI's linter (run by scripts/test.sh through `npm run lint`): the recommended
// JavaScript and TypeScript rules, type-aware so floating promises and unsafe
// assignments from IPC answers are caught.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  // bindings.ts is generated from the Rust side (tests/bindings.rs keeps it current).
  { ignores: ['dist/', 'node_modules/', 'src/bindings.ts'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['src/**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: false }],
    },
  },
);
