import { h } from './dom';

describe('h', () => {
  it('puts untrusted text in as text, never as markup', () => {
    const hostile = '<img src=x onerror="window.pwned=1"><script>window.pwned=2</script>';
    const el = h('p', {}, hostile);
    expect(el.textContent).toBe(hostile);
    expect(el.querySelector('img')).toBeNull();
    expect(el.querySelector('script')).toBeNull();
    expect(el.innerHTML).toContain('&lt;img');
  });
  it('sets attributes as strings and wires handlers', () => {
    let clicked = 0;
    const b = h('button', { title: '"><b>x</b>', onclick: () => { clicked++; } }, 'go');
    b.click();
    expect(clicked).toBe(1);
    expect(b.getAttribute('title')).toBe('"><b>x</b>');
    expect(b.children.length).toBe(0);
  });
});
