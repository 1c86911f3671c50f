// eslint's and typescript-eslint's recommended rules; the layout is prettier's (npm run format:check).
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';

export default defineConfig({ ignores: ['lib/', '.yarn/'] }, js.configs.recommended, tseslint.configs.recommended);
