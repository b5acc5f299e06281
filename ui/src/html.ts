/** JSX-like templates without a compiler step (htm bound to Preact's h). */
export { html } from 'htm/preact';
