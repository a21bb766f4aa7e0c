// Text only (textContent): nothing from the backend is ever parsed as HTML.
function show(id, text) {
  document.getElementById(id).textContent = text;
}

async function load() {
  const status = document.getElementById('status');
  try {
    const info = await window.__TAURI__.core.invoke('app_info');
    show('public-key', info.public_key ?? 'not created yet — run `gatehouse init`');
    show('keystore', info.keystore === 'os' ? 'OS keychain' : 'key file (opt-in)');
    show('data-dir', info.data_dir);
    show('version', info.version);
  } catch (e) {
    status.classList.add('error');
    status.textContent = `${e.code ?? 'ERROR'}: ${e.message ?? e}`;
  }
}

load();
