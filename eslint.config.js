// Type-aware lint: in a durable runtime an un-awaited promise is a correctness bug, so the promise rules are errors.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'dist-bench/**', 'node_modules/**', 'bin/**', 'eslint.config.js', 'coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/require-await': 'off',
      // Registries hold task types of different input/checkpoint types; `TaskType<any, any>` is the honest type there.
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
    },
  },
  // The dashboard: plain browser ES modules shipped as they are (no build step), linted without type information.
  { files: ['web/**/*.js'], ...tseslint.configs.disableTypeChecked },
  {
    files: ['web/**/*.js'],
    languageOptions: {
      sourceType: 'module',
      globals: Object.fromEntries(
        ['window', 'document', 'location', 'history', 'localStorage', 'sessionStorage', 'fetch', 'AbortController', 'TextDecoder', 'URLSearchParams', 'URL', 'Blob', 'Node', 'crypto', 'confirm', 'setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'console'].map((g) => [g, 'readonly']),
      ),
    },
  },
  // Layering (DESIGN.md §2): each driver lives only in its adapter folder.
  {
    files: ['src/**/*.ts'],
    ignores: ['src/store/sqlite/**', 'src/store/postgres/**'],
    rules: { 'no-restricted-imports': ['error', { paths: [
      { name: 'better-sqlite3', message: 'better-sqlite3 belongs to src/store/sqlite only' },
      { name: 'pg', message: 'pg belongs to src/store/postgres only' },
    ] }] },
  },
  {
    files: ['src/store/sqlite/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { paths: [{ name: 'pg', message: 'pg belongs to src/store/postgres only' }] }] },
  },
  {
    files: ['src/store/postgres/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { paths: [{ name: 'better-sqlite3', message: 'better-sqlite3 belongs to src/store/sqlite only' }] }] },
  },
);
