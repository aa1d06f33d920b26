"""What guards lwap's inputs and outputs, apart from the model code: files read with limits and written
atomically (`files`, `limits`, `safe_yaml`, `table_files`), one writer per folder (`locking`), and the checks
of what a model folder may hold before anything in it is loaded (`model_folder`, `weights_files`,
`tokenizer_files`, `backbone_fit`, `module_fit`)."""
