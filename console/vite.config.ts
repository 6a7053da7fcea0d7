import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';

// Built into the gateway's dist/, which serves it at /console (nothing loaded from elsewhere).
export default defineConfig({
  base: '/console/',
  plugins: [react()],
  build: { outDir: '../dist/console', emptyOutDir: true, chunkSizeWarningLimit: 1500 },
});
