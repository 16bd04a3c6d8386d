from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("benchapp", "0011_merge_20261123_0926"),
    ]

    operations = [
        migrations.AddField(
            model_name="cell",
            name="repeat_stop",
            field=models.JSONField(blank=True, default=dict),
        ),
    ]
