//! A Tauri window with a one-line page and nothing else: the memory baseline that
//! `benches/desktop_memory.rs` measures the app against, built from the same Tauri.

fn main() {
    let mut context = tauri::generate_context!();
    // Not the app's window (it would load the app's UI): a page with one line of text.
    context.config_mut().app.windows.clear();
    tauri::Builder::default()
        .setup(|app| {
            tauri::WebviewWindowBuilder::new(app, "bare", tauri::WebviewUrl::App("bare.html".into())).title("bare window").inner_size(1024.0, 700.0).build()?;
            Ok(())
        })
        .run(context)
        .expect("the bare window runs");
}
